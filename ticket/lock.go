package ticket

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/pvlock/pvlock/internal/faults"
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

const (
	tailShift        = 32
	flagBit   uint64 = 1 << tailShift // slowpath flag: LSB of the tail ticket
	carry     uint64 = 1 << tailShift // what head's wrap adds to tail
)

// MaxWaiters is the number of goroutines that may hold or wait for a PV
// ticket lock at once before tickets would alias (2^31 - 1; native: 2^32 - 1).
const MaxWaiters = 1<<31 - 1

// Lock is a ticket spinlock. The zero value is an unlocked PV lock. A Lock
// must not be copied after first use.
//
// In the terminology of the Go memory model, the n'th call to Unlock
// “synchronizes before” the m'th call to Lock for any n < m. A successful
// call to TryLock is equivalent to a call to Lock. A failed call to TryLock
// does not establish any “synchronizes before” relation at all.
type Lock struct {
	_      lockcore.NoCopy
	word   atomic.Uint64
	waking atomic.Uint32 // ticket|1 of a head holder kicked awake, a hint
	mode   Mode          // fixed before first use
	spin   lockcore.Spin // the PV spin threshold
	// gate restricts which waiters take a ticket (PV only; see
	// lockcore.Gate): the others wait outside without one.
	gate       lockcore.Gate
	unrestrict bool            // NoRestriction: every waiter takes a ticket
	named      *lockstat.Named // Name: the statistics of the lock's name, one per mode
}

// inc returns the ticket step and the mask that strips the flag. Both are
// computed from the mode without a branch (ModePV is 0, ModeNative 1): the
// step is 2 or 1, and only the PV mask clears the tail's LSB.
func (l *Lock) inc() (inc uint32, mask uint32) {
	return uint32(2 - l.mode), ^uint32(1 - l.mode)
}

// flag returns the slowpath flag as it sits in the word for this lock's
// mode: flagBit for a PV lock, 0 for a native one, whose tail LSB is an
// ordinary ticket bit.
func (l *Lock) flag() uint64 { return uint64(1-l.mode) << tailShift }

func split(w uint64) (head, tail uint32) { return uint32(w), uint32(w >> tailShift) }

// batchHeads sets how often an Unlock takes the outlined path to add the
// lock's releases to the acquisitions counter: whenever the new head is a
// multiple of batchHeads, that is every batchHeads/inc releases (1024 for
// a PV lock, 2048 for a native one). The head ticket itself is the lock's
// own count of its releases, so counting costs the fast path nothing but
// this test, which also catches the head wrap (a new head of 0).
const batchHeads = 2048

// Lock takes a ticket and waits until it is served.
func (l *Lock) Lock() { l.lock((*Lock).lockContended) }

// lock is the fast path of Lock: a free lock (the tail, flag aside, equal
// to the head) is taken with one compare-and-swap that takes the next
// ticket. Everything else is contended, always lockContended. It is
// passed as a parameter rather than called by name because the inliner
// charges a call of a parameter as cheap: lock, and with it Lock, fit its
// budget and are inlined into the caller, where contended is a direct call
// again.
//
// A contended locker takes no ticket here: whether it takes one at all is
// the gate's decision (lockContended).
func (l *Lock) lock(contended func(*Lock)) {
	// w-w<<32 has the distance from head to tail in its high half; 2<<32>>mode
	// is the PV or native step in the tail.
	// step: take-ticket
	if w := l.word.Load(); w-w<<tailShift >= 2<<tailShift>>l.mode || !l.word.CompareAndSwap(w, w+2<<tailShift>>l.mode) {
		contended(l)
	}
}

// lockContended is the outlined rest of Lock: the lock was held, or the
// compare-and-swap lost a race. A PV locker passes the gate first, which
// may keep it waiting outside, without a ticket, while the lock is
// saturated; a native one takes its ticket at once.
func (l *Lock) lockContended() {
	defer lockcore.ContentionEnd(lockcore.ContentionStart(l, l.stats())) // the contention profile and lockup detector
	if l.mode == ModeNative {
		l.lockQueued()
		return
	}
	l.gate.Enter((*gated)(l), l.stats(), &gateEvents, !l.unrestrict)
	defer l.gate.Leave()
	l.lockQueued()
}

// lockQueued takes a ticket with an atomic add and waits until it is
// served.
func (l *Lock) lockQueued() {
	inc, mask := l.inc()
	// step: queue-ticket
	head, tail := split(l.word.Add(uint64(inc) << tailShift))
	if ticket := (tail - inc) & mask; ticket != head {
		l.lockSlow(ticket, head, inc)
	}
}

// TryLock takes the lock if it is free and reports whether it did. It
// never waits and never jumps the queue: it succeeds only when nobody
// holds or waits for the lock.
func (l *Lock) TryLock() bool {
	inc, mask := l.inc()
	old := l.word.Load()
	head, tail := split(old)
	if head != tail&mask {
		return false
	}
	return l.word.CompareAndSwap(old, old+uint64(inc)<<tailShift)
}

// Unlock releases the lock. Unlocking an unlocked Lock panics, with a
// panic that can be recovered (sync.Mutex throws a fatal error instead).
// As with sync.Mutex, a Lock is not tied to a goroutine: one goroutine may
// lock it and another unlock it.
func (l *Lock) Unlock() { l.unlock((*Lock).unlockOutlined) }

// unlock is the fast path of Unlock, made inlinable as lock is. Only the
// holder moves the head, so the head of the snapshot prev is the one we
// release. A lock that is not held (the tail less than one step ahead),
// a head that wraps, and every batch-th release go to outlined before
// anything is written (slowRelease says which); otherwise the release is
// one atomic add, and a slowpath flag in its result sends us to outlined
// after it.
func (l *Lock) unlock(outlined func(*Lock, uint64)) {
	inc := uint64(2) >> l.mode
	// The snapshot the slow path clears the flag against. It is
	// l.word.Load() spelled as the intrinsic on the word's only field (at
	// offset 0), which costs the inliner less than the method.
	// step: unlock-snapshot
	prev := atomic.LoadUint64((*uint64)(unsafe.Pointer(&l.word)))
	// Lost wakeup, flag: the release is an atomic add, a full barrier,
	// and the flag we test comes from the same atomic step, so a waiter
	// whose set-flag (in halt) comes after it is guaranteed to see our new
	// head in its recheck instead. The flag is (inc&2)<<31: flagBit for a
	// PV lock, 0 for a native one.
	// Head wrap: a head that wraps is sent to outlined by slowRelease
	// before anything is written; there the release cancels the carry
	// into tail, which the add would otherwise put in the tail ticket.
	// step: unlock-wrap
	// step: unlock-release
	if slowRelease(prev, inc) || l.word.Add(inc)&((inc&2)<<31) != 0 {
		outlined(l, prev)
	}
}

// unlock loads the word through its address as a plain uint64: this fails
// to compile if the word leaves offset 0 or atomic.Uint64 holds more than
// its value.
var _ = [1]struct{}{}[unsafe.Offsetof(Lock{}.word)+unsafe.Sizeof(Lock{}.word)-8]

// slowRelease reports whether Unlock must not release the word prev with
// a plain add of inc: the lock is not held (the tail less than one step
// ahead of the head; prev-prev<<32 has tail-head in its high half), or the
// new head is a multiple of batchHeads, which includes the head wrap.
func slowRelease(prev, inc uint64) bool {
	return prev-prev<<tailShift < inc<<tailShift || (prev+inc)&(batchHeads-1) == 0
}

// unlockOutlined is the rest of Unlock. Unless slowRelease(prev), the
// fast path released the lock and its result carried the slowpath flag;
// otherwise nothing was written yet, and here are the misuse panic, the
// head wrap and the batch boundary of the acquisitions count.
func (l *Lock) unlockOutlined(prev uint64) {
	inc, mask := l.inc()
	if !slowRelease(prev, uint64(inc)) {
		l.unlockSlow(prev, inc)
		return
	}
	head, tail := split(prev)
	if head == tail&mask {
		// Nothing was written: a refused Unlock leaves the lock as it was.
		panic("ticket: unlock of unlocked lock")
	}
	delta := uint64(inc)
	if head+inc == 0 {
		delta -= carry // head wraps: cancel the carry into tail
	}
	if l.word.Add(delta)&l.flag() != 0 {
		l.unlockSlow(prev, inc)
	}
	// Counted after the release, so that the count never lengthens a
	// critical section. The stripe is picked by the lock's address:
	// different locks flush to different lines, each once per batch.
	if lockcore.StatsOn.Load() {
		l.stats().AddHint(uint32(lockcore.Key(l)>>6), evAcquisitions, uint64(batchHeads/inc))
	}
}

// IsContended reports whether another goroutine waits for the lock: holds
// a later ticket (the kernel's spin_is_contended) or waits at the gate
// without one. It is two atomic loads.
func (l *Lock) IsContended() bool {
	inc, mask := l.inc()
	head, tail := split(l.word.Load())
	return tail&mask-head > inc || l.gate.Waiting()
}

// IsLocked reports whether the lock is held.
func (l *Lock) IsLocked() bool {
	_, mask := l.inc()
	head, tail := split(l.word.Load())
	return head != tail&mask
}

// waiters holds the PV waiters that halted, keyed by (lock, awaited ticket),
// so an unlocker can kick exactly the holder of the next ticket.
var waiters kick.Table

// lockSlow waits for ticket: spin, and for a PV lock halt after each
// threshold of spins, until head reaches the ticket.
func (l *Lock) lockSlow(ticket, head, inc uint32) {
	if ticket+inc == head {
		panic(fmt.Sprintf("ticket: more than %d concurrent lockers: tickets alias", MaxWaiters))
	}
	st := l.stats()
	pv := l.mode == ModePV
	for {
		// Halting, and so the early halt, only while PV spinning is on: with
		// it off (nopvspin) a waiter spins, polling for cross-vCPU calls,
		// whatever the waking hint says.
		canHalt := pv && lockcore.PVSpin.Load()
		for sp := l.spin.Spinner(canHalt, false); ; {
			// step: poll-head
			head := uint32(l.word.Load())
			if head == ticket {
				sp.Acquired()
				l.acquired(ticket, st)
				return
			}
			// step: early-halt
			if canHalt && !sp.Aware() && l.waking.Load() == head|1 {
				// The ticket being served belongs to a waiter that was
				// halted and has only been kicked: it is not running yet,
				// so spinning blindly now only delays it. Halt at once.
				// A spinner that sees its CPU's load needs no hint: it
				// spins on only while its CPU has nothing else to run.
				st.IncHint(ticket, evHaltEarly)
				break
			}
			if !sp.Spin() {
				break
			}
		}
		if !canHalt {
			continue
		}
		if l.halt(ticket, st) {
			l.acquired(ticket, st)
			return
		}
	}
}

// acquired ends a slow-path wait: head serves ticket. It retires the waking
// hint if the hint names this ticket (we were the kicked holder and we now
// run), so that later arrivals spin again instead of halting at once
// behind a holder that is no longer waking.
func (l *Lock) acquired(ticket uint32, st *lockcore.Stats) {
	// Stale hint: unlockSlow's waking-set comes before its kick, so this
	// retirement by the kicked holder cannot come first and be undone.
	// step: retire-hint
	if l.waking.Load() == ticket|1 {
		l.waking.CompareAndSwap(ticket|1, 0)
	}
	if lockcore.StatsOn.Load() {
		st.IncHint(ticket, evAcquiredSlow)
	}
}

// haltEvents are the events lockcore.Halt counts for a ticket lock.
var haltEvents = lockcore.HaltEvents{Timeouts: evTimeouts, LostWakeups: evLostWakeups}

// halt is the PV slow path (the kernel's lock_spinning): publish, flag,
// re-check, halt. It reports whether the re-check found the lock ours
// ("pickup"); otherwise the caller goes back to spinning, whatever woke it.
func (l *Lock) halt(ticket uint32, st *lockcore.Stats) bool {
	w := kick.Get()
	defer kick.Put(w)
	slot := w.Slot
	// Lost wakeup, arm: arm before publishing, so that a kick that
	// unlockSlow's table-kick sends once it finds us published cannot be
	// erased by arming.
	// step: arm
	w.Arm()
	// step: publish
	waiters.Publish(w, lockcore.Key(l), uint64(ticket))
	// Misrouted kick: withdraw on every way out, a panicking halt hook (a
	// cross-vCPU call's handler run on the way into or out of the halt)
	// included: the table must not route a later table-kick for this
	// ticket to a waiter that is no longer halted on it, nor keep a reused
	// waiter linked in two buckets.
	defer waiters.Withdraw(w)
	st.Inc(slot, evTakenSlow)
	// Lost wakeup, flag: an atomic RMW, then the recheck. With the
	// unlocker's atomic add at unlock-release, either its flag test sees
	// this flag (and kicks us) or our recheck sees its new head. A plain
	// store here could let both miss.
	// step: set-flag
	l.word.Or(flagBit)
	faults.Inject(faults.TicketFlagRecheck)
	// step: recheck
	if uint32(l.word.Load()) == ticket {
		st.Inc(slot, evPickup)
		return true
	}
	st.Inc(slot, evHalts)
	// step: halt
	res := lockcore.Halt(st, w, haltEvents, func() bool { return uint32(l.word.Load()) == ticket })
	if res == kick.Spurious {
		st.Inc(slot, evSpurious)
	}
	return false
}

// unlockSlow runs when the released word carried the slowpath flag
// (the kernel's __ticket_unlock_slowpath). prev is the word before the
// release. The flag says that a ticket holder may have halted, or that
// passive waiters wait at the gate, and it is cleared only by a CAS
// against the released snapshot, never by a blind store, which could erase
// a flag a new waiter just set.
func (l *Lock) unlockSlow(prev uint64, inc uint32) {
	faults.Inject(faults.TicketUnlockKick)
	st := l.stats()
	st.Inc(-1, evReleasedSlow)
	head, tail := split(prev)
	next := head + inc // the ticket now being served
	released := uint64(tail)<<tailShift | uint64(next)
	// Lost wakeup, gate: read after the release, as a passive waiter's
	// count comes before its flag and its re-check of the lock (see
	// lockcore.Gate): a waiter we miss here sees the lock free.
	// step: unlock-gate-check
	passive := l.gate.Waiting()
	if tail&^1 == next && !passive {
		// Erased flag: nobody queued when we snapshotted, and nobody waits
		// at the gate, so clear the flag, but only if the word is still
		// exactly that (flag set, no new ticket taken). A waiter that took
		// a ticket since, and whose set-flag in halt follows, makes this
		// CAS fail, and we kick.
		// step: clear-cas
		if l.word.CompareAndSwap(released, released&^flagBit) {
			// Lost wakeup, gate: a passive waiter that counted itself
			// after our look at the gate may have set its mark on a flag
			// that was set already, and this CAS just erased it. Look
			// again: its count came before its mark, which came before
			// this CAS. If it waits, set the flag again and let the gate
			// admit, as a flagged release would.
			if !l.gate.Waiting() {
				return
			}
			l.word.Or(flagBit)
			l.gate.Released(st, &gateEvents)
			return
		}
	}
	// Only an active waiter of the gate holds a ticket: with none, there
	// is no ticket holder to kick.
	if tail&^1 != next || l.gate.Active() != 0 {
		l.kickNext(st, next)
	}
	if passive {
		// step: unlock-gate
		l.gate.Released(st, &gateEvents)
	}
}

// kickNext kicks the holder of ticket next, now served, if it halted. If it
// has not, it is still spinning and will see head on its own, or its
// re-check after flagging will.
func (l *Lock) kickNext(st *lockcore.Stats, next uint32) {
	// Tell spinners that the new head's holder is waking up, not running:
	// they halt instead of spinning through its wake-up.
	// Stale hint: the hint is set before the kick, so that the woken
	// holder's retire-hint (in acquired) cannot come first and leave it
	// set; if the holder was not asleep (it was polling, or had not halted
	// yet) it runs already, and waking-undo takes the hint back at once.
	// step: waking-set
	l.waking.Store(next | 1)
	// step: table-kick
	w, asleep, _ := waiters.KickWaiter(lockcore.Key(l), uint64(next))
	if !asleep {
		// step: waking-undo
		l.waking.CompareAndSwap(next|1, 0)
	}
	if w != nil {
		st.Inc(-1, evReleasedSlowKicked)
	}
	if asleep {
		// The new holder sleeps: if it shares our CPU, make way for it.
		lockcore.YieldTo(w)
	}
}

// gated is the lock as its gate sees it (lockcore.Gated).
type gated Lock

// MarkPassive is the gate's mark: a passive waiter sets the slowpath flag,
// so that every release runs unlockSlow and looks at the gate. It is the
// same atomic RMW as a halting waiter's set-flag.
// step: gate-set-flag
func (g *gated) MarkPassive() { g.word.Or(flagBit) }

// Free reports whether nobody holds the lock.
func (g *gated) Free() bool { return !(*Lock)(g).IsLocked() }
