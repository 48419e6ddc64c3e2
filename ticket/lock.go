package ticket

import (
	"fmt"
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/faults"
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// Lock word.
//
// Go has no 16-bit atomics, so the head and tail tickets share one 64-bit
// word: head, the ticket now served, in the low half, and tail, the next
// ticket to hand out, in the high half.
//
//	63                      33   32   31                              0
//	+--------------------------+----+---------------------------------+
//	| tail ticket              |flag| head ticket (now serving)       |
//	+--------------------------+----+---------------------------------+
//
// The kernel picks one ticket lock at boot. Here a Lock's mode is fixed
// before first use; the paths that both variants run take their variant's
// constants from consts, and the PV-only paths (halt, unlockSlow, the
// gate's mark) use pvInc and flagBit:
//
//	variant  inc (ticket step)  flag     bit 0 of the tail
//	PV       pvInc = 2          flagBit  the slowpath flag
//	native   nativeInc = 1      noFlag   a ticket bit
//
// The lock is free when tail, the flag aside, equals head: w-w<<tailShift
// has tail-head in its high half, and the flag is less than a step, so
// free tests w-w<<tailShift < inc<<tailShift. The flag says that a ticket
// holder may have halted or that a waiter waits at the gate: a release
// whose result has it runs unlockSlow. Waiters set it with an atomic Or;
// only unlockSlow's CAS against the released word clears it.
//
//	operation   word change                           who
//	Lock        tail += inc iff head == tail&^flag    CAS, the fast path
//	            tail += inc (atomic add)              a contended locker the gate admitted
//	TryLock     tail += inc iff head == tail&^flag    CAS
//	halt        |= flagBit (atomic or)                PV waiter after spinning
//	passive     |= flagBit (atomic or)                PV waiter outside the lock
//	Unlock      head += inc (atomic add)              holder
//	clear flag  CAS released -> released&^flagBit     PV unlocker, only if no one queued
//	                                                  and nobody waits outside
//
// When head wraps from 2^32-inc to 0 the add would carry into tail. The
// holder knows its own ticket, so Unlock then adds inc-carry instead,
// cancelling the carry: the word is exact across wrap-around. Tail simply
// overflows out of the word.
const (
	tailShift        = 32             // the tail ticket's place: the high half
	flagBit   uint64 = 1 << tailShift // the slowpath flag: bit 0 of a PV tail
	noFlag    uint64 = 0              // a native lock's flag: none
	carry     uint64 = 1 << tailShift // what head's wrap adds to tail
	pvInc            = 2              // the PV ticket step, which leaves bit 0 of the tail to flagBit
	nativeInc        = 1              // the native ticket step
)

// wakingTag marks the waking hint: it holds ticket|wakingTag, never 0 (no
// hint), since PV tickets are even.
const wakingTag = 1

// variantConsts is the constant set of a ticket lock variant.
type variantConsts struct {
	inc  uint64 // the ticket step
	flag uint64 // the slowpath flag as it sits in the word
}

// consts holds each mode's constants. It is indexed by mode, one load,
// rather than picked by a branch, which would not fit Unlock in the
// inliner's budget.
var consts = [...]variantConsts{
	ModePV:     {inc: pvInc, flag: flagBit},
	ModeNative: {inc: nativeInc, flag: noFlag},
}

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
	waking atomic.Uint32 // ticket|wakingTag of a head holder kicked awake, a hint
	mode   Mode          // fixed before first use
	spin   lockcore.Spin // the PV spin threshold
	// gate restricts which waiters take a ticket (PV only; see
	// lockcore.Gate): the others wait outside without one.
	gate       lockcore.Gate
	unrestrict bool            // NoRestriction: every waiter takes a ticket
	named      *lockstat.Named // Name: the statistics of the lock's name, one per mode
}

func split(w uint64) (head, tail uint32) { return uint32(w), uint32(w >> tailShift) }

// free reports whether nobody holds or waits for the lock whose word is w
// and ticket step inc (see Lock word).
func free(w, inc uint64) bool { return w-w<<tailShift < inc<<tailShift }

// batchHeads sets how often an Unlock takes the outlined path to add the
// lock's releases to the acquisitions counter: whenever the new head is a
// multiple of batchHeads, that is every batchHeads/inc releases (1024 for
// a PV lock, 2048 for a native one). The head ticket itself is the lock's
// own count of its releases, so counting costs the fast path nothing but
// this test, which also catches the head wrap (a new head of 0).
const batchHeads = 2048

// Lock takes a ticket and waits until it is served.
func (l *Lock) Lock() { l.lock((*Lock).lockContended) }

// lock is the fast path of Lock: a free lock is taken with one
// compare-and-swap that takes the next ticket; the rest is contended.
// contended is a parameter because the inliner charges calling one 17
// (inlineParamCallCost), not 57: so lock fits in Lock, and inlined there,
// contended is a direct call again.
func (l *Lock) lock(contended func(*Lock)) {
	c := consts[l.mode]
	// A contended locker takes no ticket here: the gate decides.
	// step: take-ticket
	if w := l.word.Load(); !free(w, c.inc) || !l.word.CompareAndSwap(w, w+c.inc<<tailShift) {
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
	c := consts[l.mode]
	inc := uint32(c.inc)
	// step: queue-ticket
	head, tail := split(l.word.Add(c.inc<<tailShift) &^ c.flag)
	if ticket := tail - inc; ticket != head {
		l.lockSlow(ticket, head, inc)
	}
}

// TryLock takes the lock if it is free and reports whether it did. It
// never waits and never jumps the queue: it succeeds only when nobody
// holds or waits for the lock.
func (l *Lock) TryLock() bool {
	c := consts[l.mode]
	w := l.word.Load()
	return free(w, c.inc) && l.word.CompareAndSwap(w, w+c.inc<<tailShift)
}

// Unlock releases the lock. Unlocking an unlocked Lock panics, with a
// panic that can be recovered (sync.Mutex throws a fatal error instead).
// As with sync.Mutex, a Lock is not tied to a goroutine: one goroutine may
// lock it and another unlock it.
func (l *Lock) Unlock() { l.unlock((*Lock).unlockOutlined) }

// unlock is the fast path of Unlock, inlined as lock is: one atomic add
// moves the head on. Only the holder moves the head, so the snapshot prev
// holds the head we release.
func (l *Lock) unlock(outlined func(*Lock, uint64)) {
	c := consts[l.mode]
	// step: unlock-snapshot
	prev := l.word.Load()
	// Head wrap: a wrapping head goes to outlined before anything is
	// written; its add there cancels the carry into tail.
	// step: unlock-wrap
	// Lost wakeup, flag: the flag is tested in the add's own result; a
	// set-flag after the add is followed by a recheck that sees our head.
	// step: unlock-release
	if slowRelease(prev, c.inc) || l.word.Add(c.inc)&c.flag != 0 {
		outlined(l, prev)
	}
}

// slowRelease reports whether Unlock must not release the word prev with
// a plain add of inc: the lock is free (!free(prev, inc), spelled out for
// the inliner's budget), or the new head is a multiple of batchHeads,
// which includes the head wrap.
func slowRelease(prev, inc uint64) bool {
	return prev-prev<<tailShift < inc<<tailShift || (prev+inc)&(batchHeads-1) == 0
}

// unlockOutlined is the rest of Unlock. Unless slowRelease(prev), the
// fast path released the lock and its result carried the slowpath flag;
// otherwise nothing was written yet, and here are the misuse panic, the
// head wrap and the batch boundary of the acquisitions count.
func (l *Lock) unlockOutlined(prev uint64) {
	c := consts[l.mode]
	if !slowRelease(prev, c.inc) {
		l.unlockSlow(prev)
		return
	}
	if free(prev, c.inc) {
		// Nothing was written: a refused Unlock leaves the lock as it was.
		panic("ticket: unlock of unlocked lock")
	}
	delta := c.inc
	if head, _ := split(prev); head+uint32(c.inc) == 0 {
		delta -= carry // head wraps: cancel the carry into tail
	}
	if l.word.Add(delta)&c.flag != 0 {
		l.unlockSlow(prev)
	}
	// Counted after the release, so that the count never lengthens a
	// critical section. The stripe is picked by the lock's address:
	// different locks flush to different lines, each once per batch.
	if lockcore.StatsOn.Load() {
		l.stats().AddHint(uint32(lockcore.Key(l)>>6), evAcquisitions, batchHeads/c.inc)
	}
}

// IsContended reports whether another goroutine waits for the lock: holds
// a later ticket (the kernel's spin_is_contended) or waits at the gate
// without one. It is two atomic loads.
func (l *Lock) IsContended() bool {
	c := consts[l.mode]
	head, tail := split(l.word.Load() &^ c.flag)
	return tail-head > uint32(c.inc) || l.gate.Passive() != 0
}

// IsLocked reports whether the lock is held.
func (l *Lock) IsLocked() bool { return !free(l.word.Load(), consts[l.mode].inc) }

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
			if canHalt && !sp.Aware() && l.waking.Load() == head|wakingTag {
				// The head's holder was kicked (waking-set) and does not run
				// yet: spinning only delays it. A load-aware spinner needs no
				// hint: it spins only while its CPU has nothing else to run.
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
	if l.waking.Load() == ticket|wakingTag {
		l.waking.CompareAndSwap(ticket|wakingTag, 0)
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
	// Misrouted kick: withdraw on every way out, a panicking halt hook's
	// included, so that no later table-kick for this ticket finds a waiter
	// that no longer halts on it.
	defer waiters.Withdraw(w)
	st.Inc(slot, evTakenSlow)
	// Lost wakeup, flag: an atomic RMW, then the recheck. Either
	// unlock-release's add finds this flag and kicks us, or the recheck
	// sees its head; with a plain store both could miss.
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

// releasedSlowSample is the sample of slow releases that are counted
// (ReleasedSlow): the release whose new head is a multiple of
// releasedSlowSample tickets counts releasedSlowSample, the others count
// nothing. While passive waiters sleep at the gate, their mark keeps the
// flag set and every release runs unlockSlow; a count of each would add
// an atomic read-modify-write to every release of a saturated lock, about
// a quarter of the time of Go's tight Mutex loop at 8 Ps.
const releasedSlowSample = 16

// The sample is taken with a mask of the ticket: releasedSlowSample must be
// a power of two, or this fails to compile.
var _ = [1]struct{}{}[releasedSlowSample&(releasedSlowSample-1)]

// unlockSlow runs when the released word carried the slowpath flag (the
// kernel's __ticket_unlock_slowpath), so only for a PV lock. prev is the
// word before the release. The flag is cleared only by a CAS against the
// released word, never by a blind store, which could erase a flag a new
// waiter just set.
func (l *Lock) unlockSlow(prev uint64) {
	faults.Inject(faults.TicketUnlockKick)
	st := l.stats()
	head, tail := split(prev)
	next := head + pvInc // the ticket now being served
	if next&(releasedSlowSample*pvInc-1) == 0 {
		st.AddHint(next, evReleasedSlow, releasedSlowSample)
	}
	released := uint64(tail)<<tailShift | uint64(next)
	queued := !free(released, pvInc) // ticket next is taken: its holder may have halted
	// Lost wakeup, gate: read after the release. A passive waiter counts
	// itself before gate-set-flag and its re-check, so one we miss here
	// sees the lock free. While the oldest passive waiter watches the lock
	// (X), Waiting reports false and clear-cas below may erase the passive
	// waiters' mark: the watcher sets the flag again as it stops watching
	// (lockcore's gate-watch-mark), before it re-checks the lock.
	// step: unlock-gate-check
	passive := l.gate.Waiting()
	if !queued && !passive {
		// Erased flag: nobody queued or waits, so clear the flag, but only
		// if the word is still the released one: a ticket taken since (and
		// the set-flag that may follow it) fails the CAS, and we kick.
		// step: clear-cas
		if l.word.CompareAndSwap(released, released&^flagBit) {
			// Lost wakeup, gate: a waiter counted after unlock-gate-check
			// may have set gate-set-flag on our flag, which clear-cas just
			// erased. Look again; if it waits, flag and admit.
			if !l.gate.Waiting() {
				return
			}
			l.word.Or(flagBit)
			l.gate.Released(next/pvInc, st, &gateEvents)
			return
		}
	}
	// Only an active waiter of the gate holds a ticket: with none, there
	// is no ticket holder to kick.
	if queued || l.gate.Active() != 0 {
		l.kickNext(st, next)
	}
	if passive {
		// step: unlock-gate
		l.gate.Released(next/pvInc, st, &gateEvents)
	}
}

// kickNext kicks the holder of ticket next, now served, if it halted. If it
// has not, it is still spinning and will see head on its own, or its
// re-check after flagging will.
func (l *Lock) kickNext(st *lockcore.Stats, next uint32) {
	// Stale hint: spinners halt on the hint (early-halt). It is set before
	// table-kick, so the woken holder's retire-hint cannot come first; a
	// holder that was not asleep runs already, and waking-undo retires it.
	// step: waking-set
	l.waking.Store(next | wakingTag)
	// step: table-kick
	w, asleep, _ := waiters.KickWaiter(lockcore.Key(l), uint64(next))
	if !asleep {
		// step: waking-undo
		l.waking.CompareAndSwap(next|wakingTag, 0)
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

// stats returns the statistics the lock counts in (lockcore.LockStats).
func (l *Lock) stats() *lockcore.Stats { return lockcore.LockStats(l.named, modeStats[:], l.mode) }
