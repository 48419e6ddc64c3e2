package locks

import (
	"sync"
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/lockstat"
)

// PreemptableTicket is Ouyang and Lange's preemptable ticket spinlock
// (VEE 2013, the paper's v1.0 design), the answer to lock-waiter
// preemption that the PV ticketlock thread measured against: a ticket lock
// whose waiters give up their place in line when the line stops moving.
//
// Mutual exclusion comes from a test-and-set word; the tickets only order
// who may try it first:
//
//	phase      a waiter holding ticket t...
//	ordered    spins while head < t, for at most TimeoutUnit·(t-head) polls;
//	           the budget is recomputed from the new distance whenever head
//	           moves, so it is proportional to the waiters still ahead
//	unordered  once head reaches t, or the budget runs out (someone ahead
//	           is presumed preempted), spins on test-and-set like any other
//	           waiter in this phase: the lock is no longer FIFO
//
// Unlock advances head (the count of releases) and clears the word. The
// lock never blocks: like the original it trades fairness for progress
// only when the ordered line stalls, and its cost is spinning. A waiter
// that timed out takes the lock from whoever is next in line, which is why
// the thread found it far from FIFO fairness and slow at 1x when the unit
// is small.
//
// The zero value is an unlocked lock with DefaultTimeoutUnit.
type PreemptableTicket struct {
	_    lockcore.NoCopy
	tail atomic.Uint32 // next ticket to hand out
	head atomic.Uint32 // releases so far: the ticket whose turn it is
	held atomic.Uint32 // 1 while the lock is held: the real mutual exclusion
	// TimeoutUnit is the number of polls a waiter allows per waiter ahead
	// of it; 0 means DefaultTimeoutUnit. Set it before first use.
	TimeoutUnit uint32
}

// DefaultTimeoutUnit is the polls allowed per waiter ahead: 2^8, the
// pmtlock v3.0 default (shift 8) and the first value the PV ticketlock
// thread tried. The paper's v1.0 used 2^14.
const DefaultTimeoutUnit = 1 << 8

// Event indexes of the preemptable-ticket statistics.
const (
	ptAcquiredFast    = iota // our turn on arrival, the word was free
	ptAcquiredOrdered        // our turn came within the budget
	ptTimeouts               // the budget ran out: left the line early
)

var ptStats = lockstat.New("preemptable-ticket", "native",
	[]string{"acquired_fast", "acquired_ordered", "timeouts"})

// PreemptableTicketStats returns the statistics of all PreemptableTicket
// locks: acquisitions on arrival, after an ordered wait, and waits that
// timed out into the unordered phase.
func PreemptableTicketStats() *lockstat.Stats { return (*lockstat.Stats)(ptStats) }

// Lock acquires the lock.
func (l *PreemptableTicket) Lock() {
	t := l.tail.Add(1) - 1
	ev := ptAcquiredFast
	if h := l.head.Load(); int32(t-h) > 0 {
		ev = l.waitTurn(t, h)
	}
	// Unordered phase: test-and-test-and-set, so that waiters poll a
	// shared cache line rather than bounce it with writes.
	for l.held.Load() != 0 || !l.held.CompareAndSwap(0, 1) {
		if ev == ptAcquiredFast {
			ev = ptAcquiredOrdered
		}
		relax.Pause(1)
	}
	if lockcore.StatsOn.Load() {
		ptStats.IncHint(t, ev)
	}
}

// waitTurn is the ordered phase of ticket t, seeing head h. It returns
// when head reaches t or the budget runs out, and says which.
func (l *PreemptableTicket) waitTurn(t, h uint32) int {
	unit := uint64(l.TimeoutUnit)
	if unit == 0 {
		unit = DefaultTimeoutUnit
	}
	budget := unit * uint64(t-h)
	for {
		relax.Pause(1)
		nh := l.head.Load()
		if int32(t-nh) <= 0 {
			return ptAcquiredOrdered
		}
		if nh != h {
			// The line moved: the budget restarts from the new distance.
			h, budget = nh, unit*uint64(t-nh)
			continue
		}
		if budget--; budget == 0 {
			return ptTimeouts
		}
	}
}

// Unlock releases the lock. Unlocking an unlocked lock panics.
func (l *PreemptableTicket) Unlock() {
	if l.held.Load() == 0 {
		panic("bench: unlock of unlocked PreemptableTicket")
	}
	// Head first: the next in line stops counting down its budget as soon
	// as it sees its turn, then finds the word free.
	l.head.Add(1)
	l.held.Store(0)
}

func init() {
	// Unfair: a waiter that timed out takes the lock from whoever is next
	// in line, as often as the line stalls.
	Register(Kind{Name: "preemptable-ticket", FIFOSpin: true, Unfair: true,
		Doc: "Ouyang's preemptable ticket lock: leave the FIFO line after TIMEOUT_UNIT·position polls",
		New: func() sync.Locker { return new(PreemptableTicket) }})
}
