package qspin

import (
	"time"

	"github.com/pvlock/pvlock/internal/faults"
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
)

// prevCheckMask: a queued waiter looks at its predecessor's state every
// 256 polls, not to pound on that cache line (PV_PREV_CHECK_MASK).
const prevCheckMask = 0xff

// pvWaitNode is pv_wait_node: a non-head waiter spins on its node for the
// threshold, then halts until its predecessor hands it the queue head.
// It returns once n.locked is set.
func (l *Lock) pvWaitNode(n, prev *qnode, w *kick.Waiter) {
	for {
		early := false
		canHalt := lockcore.PVSpin.Load()
		for sp := l.spinner(canHalt); ; {
			// step: node-spin
			if n.locked.Load() != 0 {
				sp.Acquired()
				return
			}
			// A halted predecessor will not make us head soon: halt too.
			if canHalt && sp.Spins()&prevCheckMask == 0 && prev.state.Load() != stateRunning {
				early = true
				break
			}
			if !sp.Spin() {
				break
			}
		}
		if !canHalt {
			continue
		}
		// step: node-arm
		l.arm(n, w)
		// Lost wakeup, non-head: we store HALTED, then load locked; the
		// holder stores locked, then CASes HALTED -> HASHED. Both are
		// sequentially consistent, so either we see locked and do not
		// halt, or the holder sees HALTED and arranges our kick at unlock.
		// step: node-halted
		n.state.Store(stateHalted)
		// step: node-recheck
		if n.locked.Load() == 0 {
			l.count(w.Slot, evWaitNode)
			if early {
				l.count(w.Slot, evWaitEarly)
			}
			// pv_wait(&n.state, HALTED): the holder changes the state
			// before the unlocker kicks, and we armed before this check.
			// step: node-state-check
			if n.state.Load() == stateHalted {
				l.halt(n, w)
			}
		}
		// Back to running, unless the holder hashed us: then the unlocker
		// will kick us, and as queue head we must not hash ourselves too.
		// step: node-running
		n.state.CompareAndSwap(stateHalted, stateRunning)
		if n.locked.Load() == 0 {
			l.count(w.Slot, evSpurious)
		}
	}
}

// pvKickNode is pv_kick_node, run by the new lock holder right after it
// made next the queue head. It does not wake a halted next (which would
// only spin on a held lock): it marks next HASHED, hashes lock -> next and
// marks the lock SLOW, so that Unlock kicks next exactly once.
func (l *Lock) pvKickNode(next *qnode) {
	// step: kicknode-check
	if next.state.Load() != stateHalted {
		return // running: it will see locked itself
	}
	// Double entry: a new entry, a new number, bumped before the CAS. A
	// head that sees HASHED then also sees the number of the entry we are
	// about to make, and an unlocker's mark of an older entry of this node
	// no longer equals it; bumped after the CAS, that old mark would tell
	// the head that this entry is gone, and it would hash itself beside it.
	// step: kicknode-seq
	next.hashSeq.Add(1)
	// Lost wakeup, non-head: this CAS follows our store of next.locked
	// (see pvWaitNode); it fails if next is running and will see locked.
	// step: kicknode-cas
	if !next.state.CompareAndSwap(stateHalted, stateHashed) {
		return
	}
	// step: kicknode-hash
	hops := table().hash(lockcore.Key(l), next.id)
	// Hash before SLOW: whoever unlocks (possibly another goroutine)
	// finds the entry once it sees SLOW. We hold the lock, so locked is
	// 1 and Or turns it into 3 without touching pending or tail.
	// step: kicknode-slow
	l.word.Or(slowVal)
	l.stats().Add(-1, evHashHops, uint64(hops))
}

// starveAfter bounds how long the queue head of a lock with stealing
// lets running lockers overtake it. Past it the head spins with pending
// set, which closes the lock to stealers, and once kicked it waits for
// the lock with pending set rather than halt again: only lockers that slip
// in while it prepares to halt or wakes up can still overtake it, as with
// the kernel's head. sync.Mutex's starvation mode starts after the same
// millisecond. It is a variable only so that tests can move the bound.
var starveAfter = int64(time.Millisecond)

// pvWaitHeadOrLock is pv_wait_head_or_lock: the queue head spins for the
// lock; after the threshold it hashes itself, marks the lock SLOW and
// halts until the unlocker kicks it. It returns the lock word, with the
// lock held by us.
//
// The kernel's head spins with pending set, so that nobody steals the lock
// from a running head. That hands the lock from CPU to CPU on every
// release of a saturated lock, and a head that halted and was kicked
// takes it from the running lockers that overtook it while it woke. Here
// the head of a lock with stealing competes with stealers instead: it
// spins without pending, and a kicked head that finds the lock stolen
// halts again (hashing itself anew once the unlocker has told it that its
// entry is gone) while the running lockers keep the lock and its cache
// lines. Only a head overtaken for starveAfter sets pending and takes the
// lock as the kernel's head does. A no-steal lock's head always does.
//
// since is when the waiter began to wait for the lock (0: now), from which
// starveAfter counts: a waiter that spent it outside the gate, or
// contending, is starving as soon as it heads the queue.
func (l *Lock) pvWaitHeadOrLock(n *qnode, w *kick.Waiter, since int64) uint32 {
	// pv_kick_node hashed us already: the lock is (or is about to be)
	// SLOW and the unlocker will kick us; hashing again would make a
	// second entry for the lock.
	// step: head-hashed
	hashed := n.state.Load() == stateHashed
	fair := l.mode != ModePV
	if since == 0 {
		since = now()
	}
	for {
		// step: head-running
		n.state.Store(stateRunning) // for our successor's wait-early check
		// step: head-starving
		if !fair && now()-since >= starveAfter {
			fair = true
			l.count(w.Slot, evHeadStarving)
		}
		if fair {
			// step: head-pending
			l.word.Or(pendingVal) // we spin: stealing is off
		}
		for {
			for sp := l.spinner(lockcore.PVSpin.Load()); ; {
				// step: head-trylock
				if l.headTrylock(fair) {
					sp.Acquired()
					return l.word.Load() | lockedVal
				}
				if !sp.Spin() {
					break
				}
			}
			// A lock that is not SLOW while we are hashed: either the
			// unlocker removed our entry, released and kicked us, and the
			// lock was stolen since, or pvKickNode has hashed us and not
			// yet marked the lock SLOW. There is nothing to halt on.
			// step: head-wait-again
			if !hashed || l.word.Load()&lockedMask == slowVal {
				break
			}
			// Once the unlocker says our entry is gone, a head that lets
			// stealers in hashes itself again and halts. A fair head
			// keeps spinning, with pending set so that nobody else
			// steals meanwhile.
			// Double entry: only the unlocker's mark says the entry is
			// gone. A kick does not (it may be a stray kick of an earlier
			// wait), nor does a lock that is not SLOW (pvKickNode hashes
			// before it sets SLOW).
			// step: head-unhashed
			if !fair && n.entryGone() {
				hashed = false
				break
			}
			l.count(w.Slot, evWaitAgain)
		}
		if fair {
			// step: head-clear-pending
			l.word.And(^pendingVal)
		}
		if !lockcore.PVSpin.Load() {
			continue
		}
		// step: head-arm
		l.arm(n, w)
		if !hashed {
			hashed = true
			// step: head-hash
			hops := table().hash(lockcore.Key(l), n.id)
			l.stats().Add(w.Slot, evHashHops, uint64(hops))
			// Lost wakeup, head: the entry is written before this CAS
			// sets SLOW, and the unlocker reads the entry only after its
			// own CAS saw SLOW. If the lock is free instead, take it:
			// we never halt on a lock nobody holds.
			// step: head-lock-or-slow
			if l.lockOrMarkSlow() {
				// step: head-unhash
				table().unhash(lockcore.Key(l))
				return l.word.Load()
			}
		}
		// step: head-mark-hashed
		n.state.Store(stateHashed) // successors may halt early
		l.count(w.Slot, evWaitHead)
		// pv_wait(&lock->locked, SLOW): the unlocker releases before it
		// kicks, and we armed before this check.
		faults.Inject(faults.QspinHashHalt) // widens the hash/SLOW-to-halt window in fault builds
		// step: head-recheck
		if l.word.Load()&lockedMask == slowVal {
			l.halt(n, w)
		}
	}
}

// headTrylock is the queue head's attempt at the lock: *,1,0 -> *,0,1 for
// a fair head, which has set pending, and *,0,0 -> *,0,1 for one that
// competes with stealers.
func (l *Lock) headTrylock(fair bool) bool {
	if fair {
		return l.trylockClearPending()
	}
	return l.stealOnce()
}

// trylockClearPending takes the lock for the spinning head: *,1,0 -> *,0,1
// by CAS (a plain check of the locked field is no barrier).
func (l *Lock) trylockClearPending() bool {
	for {
		v := l.word.Load()
		if v&lockedMask != 0 {
			return false
		}
		if l.word.CompareAndSwap(v, v&^pendingVal|lockedVal) {
			return true
		}
	}
}

// lockOrMarkSlow is the head's xchg(locked, SLOW) in whole-word form:
// take the lock if it is free (reporting true), else mark it SLOW.
func (l *Lock) lockOrMarkSlow() bool {
	for {
		v := l.word.Load()
		if v&lockedMask == 0 {
			if l.word.CompareAndSwap(v, v|lockedVal) {
				return true
			}
		} else if l.word.CompareAndSwap(v, v|slowVal) {
			return false
		}
	}
}

// unlockPV is __pv_queued_spin_unlock for a word the fast CAS did not
// release: a plain held lock with waiters (release with a CAS that leaves
// pending and tail alone) or a SLOW one.
func (l *Lock) unlockPV() {
	for {
		v := l.word.Load()
		switch v & lockedMask {
		case lockedVal:
			// Lost wakeup, head: release by CAS on the whole word, never
			// by a blind store or And, so that a head that marks the lock
			// SLOW after our load makes this CAS fail and we see SLOW.
			// step: unlock-cas
			if l.word.CompareAndSwap(v, v&^lockedMask) {
				return
			}
		case slowVal:
			l.unlockSlow()
			return
		default:
			panic("qspin: unlock of unlocked lock")
		}
	}
}

// unlockSlow is __pv_queued_spin_unlock_slowpath. A SLOW lock is never
// released before its hash entry is removed, so a lock has at most one
// entry.
func (l *Lock) unlockSlow() {
	// step: unlock-unhash
	n := nodeAt(table().unhash(lockcore.Key(l)))
	// Double entry: read the number of the entry just removed before the
	// release. Its head waits for this lock, which we hold, so it cannot
	// have been hashed anew yet; read after the release, the number could
	// be that of a newer entry (the head took the lock, moved on and was
	// hashed again), and our mark would call that entry gone.
	// step: unlock-seq
	seq := n.hashSeq.Load()
	// step: unlock-release
	l.word.And(^lockedMask)
	// From here the lock may be taken, released or even garbage: touch
	// only the node (kept alive forever). If its owner has moved on, the
	// kick is a spurious wake-up of whoever uses the waiter now, and the
	// mark names an entry older than any it has now.
	// Double entry: the mark follows the release. A head told earlier
	// would hash itself while the lock is still SLOW, find it SLOW and
	// halt, and the release would leave its new entry behind.
	// step: unlock-mark
	n.markUnhashed(seq)
	w := n.waiter.Load()
	t := now()
	n.kickTime.Store(t)
	// step: unlock-kick
	if _, asleep := w.KickWaking(); asleep {
		// The queue head sleeps: if it shares our CPU, make way for it.
		lockcore.YieldTo(w)
	}
	st := l.stats()
	st.Inc(-1, evKickUnlock)
	st.Add(-1, evLatencyKick, uint64(now()-t))
}

// arm prepares a halt: clear any old kick token and kick time before the
// re-check that decides whether to halt. A kick for this wait is sent only
// after the condition re-checked below changed, hence after arm.
func (l *Lock) arm(n *qnode, w *kick.Waiter) {
	w.Arm()
	n.kickTime.Store(0)
}

// haltEvents are the events lockcore.Halt counts for a qspin lock.
var haltEvents = lockcore.HaltEvents{Timeouts: evHaltTimeouts, LostWakeups: evLostWakeups}

// halt halts the waiter until it is kicked, wakes spuriously or the halt
// watchdog expires, and records what happened (lockcore.Halt), with the
// kick-to-wake-up latency of a kicked halt. A timed-out halt is a lost
// wake-up if we are queue head and the lock is free, yet nobody kicked us.
func (l *Lock) halt(n *qnode, w *kick.Waiter) {
	slot := w.Slot
	st := l.stats()
	res := lockcore.Halt(st, w, haltEvents, func() bool {
		return n.locked.Load() != 0 && l.word.Load()&lockedMask == 0
	})
	st.Inc(slot, evHalts)
	if res == kick.Kicked {
		if t := n.kickTime.Swap(0); t != 0 {
			st.Inc(slot, evKickWake)
			st.Add(slot, evLatencyWake, uint64(now()-t))
		}
	}
}
