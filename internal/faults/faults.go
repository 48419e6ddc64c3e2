// Package faults widens the race windows of pvlock's lock slow paths, so
// that torture tests hit the interleavings a lost wake-up or a broken
// mutual exclusion would need.
//
// A lock marks each window with a call to Inject naming its Point:
//
//	l.word.Or(flagBit)
//	faults.Inject(faults.TicketFlagRecheck) // window: flag set, head not re-checked
//	if uint32(l.word.Load()) == ticket {
//
// In an ordinary build Inject is an empty function that the compiler
// inlines away: the locks pay nothing. Built with the pvlock_faults tag,
//
//	go test -race -tags pvlock_faults ./bench/torture
//
// every Inject counts a hit and, at random, delays its caller: a burst of
// PAUSEs, a sched_yield that hands the CPU to another vCPU thread (the
// preemption a real vCPU suffers inside the window), or a short sleep.
// Set tunes how often per Point; Hits tells a test that a window was
// actually reached.
package faults

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Point names one race window.
type Point uint8

const (
	// TicketFlagRecheck is the PV ticket halt path after the waiter set
	// the slowpath flag and before it re-checks head: an unlock landing
	// here must either see the flag or be seen by the re-check.
	TicketFlagRecheck Point = iota
	// TicketUnlockKick is the PV ticket unlock slow path after the
	// releasing add, whose result carried the flag, and before the flag
	// is cleared or the next waiter kicked. (The flag test itself is part
	// of the add, so this is the widest window left in Unlock.)
	TicketUnlockKick
	// QspinHashHalt is the PV queued lock's wait path after the waiter
	// hashed the lock and before it halts.
	QspinHashHalt

	// NumPoints is the number of Points.
	NumPoints
)

var pointNames = [NumPoints]string{
	TicketFlagRecheck: "ticket-flag-recheck",
	TicketUnlockKick:  "ticket-unlock-kick",
	QspinHashHalt:     "qspin-hash-halt",
}

func (p Point) String() string {
	if p < NumPoints {
		return pointNames[p]
	}
	return fmt.Sprintf("Point(%d)", int(p))
}

// Fault says how an enabled Point delays its caller. On each hit at most
// one delay happens, tried in the order sleep, yield, spin; a OneIn of 0
// disables that kind.
type Fault struct {
	// SpinOneIn: one hit in SpinOneIn spins for up to MaxSpin PAUSEs.
	SpinOneIn uint32
	MaxSpin   uint32
	// YieldOneIn: one hit in YieldOneIn calls sched_yield.
	YieldOneIn uint32
	// SleepOneIn: one hit in SleepOneIn sleeps for up to MaxSleep.
	SleepOneIn uint32
	MaxSleep   time.Duration
}

// DefaultFault is the delay of every Point until Set changes it: mostly
// short spins, often a yield, rarely a sleep of up to 100µs.
var DefaultFault = Fault{SpinOneIn: 2, MaxSpin: 4096, YieldOneIn: 8, SleepOneIn: 256, MaxSleep: 100 * time.Microsecond}

var (
	faultOf [NumPoints]atomic.Pointer[Fault]
	hits    [NumPoints]atomic.Uint64
)

func init() {
	for p := range faultOf {
		f := DefaultFault
		faultOf[p].Store(&f)
	}
}

// Set replaces the delay of p (builds without the pvlock_faults tag keep
// it but never use it). The zero Fault turns p into a plain hit counter.
func Set(p Point, f Fault) {
	if p >= NumPoints {
		panic(fmt.Sprintf("faults: Set of unknown %v", p))
	}
	faultOf[p].Store(&f)
}

// Hits returns how many times p was reached since the last Reset. It is
// always 0 without the pvlock_faults tag.
func Hits(p Point) uint64 {
	if p >= NumPoints {
		return 0
	}
	return hits[p].Load()
}

// Reset zeroes the hit counters.
func Reset() {
	for p := range hits {
		hits[p].Store(0)
	}
}
