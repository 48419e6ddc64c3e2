package qspin

import (
	"runtime"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
)

// pendingLoops bounds the wait for an in-flight pending -> locked
// hand-over before queueing (x86 _Q_PENDING_LOOPS).
const pendingLoops = 1 << 9

// lockNative is the native slow path (queued_spin_lock_slowpath without
// PV): the first contender waits on the pending bit, later ones queue.
func (l *Lock) lockNative() {
	val := l.word.Load()
	// 0,1,0: the pending owner is about to take the lock; give it a
	// moment rather than queue behind a hand-over that is almost done.
	// The wait is bounded by pendingLoops pauses; it pauses as every
	// other spin loop does (lockcore.Pause).
	for i := uint32(1); val == pendingVal && i <= pendingLoops; i++ {
		lockcore.Pause(i)
		val = l.word.Load()
	}
	if val&^lockedMask == 0 {
		// 0,0,* -> 0,1,*
		old := l.word.Or(pendingVal)
		if old&^lockedMask == 0 {
			// Pending is ours: nobody else may take the lock now (the
			// fast path and TryLock need a zero word, queuers see P).
			if old&lockedMask != 0 {
				for i := uint32(1); l.word.Load()&lockedMask != 0; i++ {
					lockcore.Pause(i)
				}
			}
			// 0,1,0 -> 0,0,1 (clear_pending_set_locked)
			l.word.Add(^(pendingVal - lockedVal - 1)) // adds lockedVal - pendingVal
			l.count(-1, evLockPending)
			return
		}
		// Someone else is pending or queued. Undo our pending only if we
		// set it: it may have made a head's n,0,0 -> 0,0,1 claim fail, and
		// that head now waits for our node to appear behind it.
		if old&pendingVal == 0 {
			l.word.And(^pendingVal)
		}
	}
	l.queue(0)
}

// lockPV is the PV slow path. The gate admits the waiter first, which may
// keep it waiting outside while the lock is saturated (lockcore.Gate).
// Then a lock with stealing lets it take the lock ahead of the queue: an
// admitted waiter of a restricted lock spins for the lock and, if running
// lockers keep it, waits outside again (contend); an unrestricted one
// tries while the queue head is not spinning (steal). A no-steal lock,
// and a waiter that has waited for starveAfter, queue. A passive caller
// enters the gate with EnterPassive (lockPassive).
func (l *Lock) lockPV(passive bool) {
	st := l.stats()
	// The wait counts from here: a waiter kept outside the gate for long
	// (admitted by the fairness bound) is starving when it contends.
	start := now()
	var restricted bool
	if passive {
		restricted = l.gate.EnterPassive((*gated)(l), st, &gateEvents, !l.unrestrict)
	} else {
		restricted = l.gate.Enter((*gated)(l), st, &gateEvents, !l.unrestrict)
	}
	defer l.gate.Leave()
	if l.mode == ModePV {
		if restricted && l.contend(st, start) || !restricted && l.steal() {
			l.count(-1, evLockStealing)
			return
		}
	}
	l.queue(start)
}

// contendStride is how many spins an admitted waiter of a restricted lock
// with stealing lets pass between two looks at the lock word: about a
// microsecond here, the 30 PAUSEs of sync.Mutex's spinner. Each look takes
// the line from the running holder, which writes it at every Lock and
// Unlock.
//
// A vCPU looks every contendStrideVCPU spins instead, and may spin longer
// (up to 1024 polls at 2x-4x, lockcore.Spin.Spinner, or its sibling window
// once its CPU is contended): a vCPU that finds no free word in its spin
// waits outside and halts, which costs a wake-up and, with its siblings
// outside too, leaves its CPU idle; a goroutine parks, and its P runs
// others. Two looks a spin missed the short gaps between a running
// locker's critical sections (ebizzy's free and its next allocation, back
// to back), and a look every 4 spins caught more of them while the spin
// was 64 polls. A look every 8 spins makes 128 looks in a spin of 1024
// polls (8 at 1x, whose spin stays 64) and costs the holder half the
// transfers of its line. Against a look every 4, over 20 rounds with the
// builds' order alternating, paired by round: dbench +9% at 1x and +2-3%
// at 2x-4x (12-16 wins of 20), ebizzy +2% at 4x (13 of 20) and -5% and
// -7% at 2x and 3x (6 and 5 of 20), lockloop within its rounds; the
// lowest cell, pooled, 0.99 x sync.Mutex (ebizzy at 4x) against 0.95. A
// look every 1 or 2 spins cost dbench at 1x a fifth, and every 16 or 32
// cost ebizzy at 1x-2x a tenth to a quarter (README, "The contender's
// stride with the longer spin" and "The serial ceiling").
const (
	contendStride     = 32
	contendStrideVCPU = 8
)

// contend is the admitted waiter of a restricted lock with stealing, the
// one waiter that spins, as sync.Mutex's spinner does: it spins for a
// free lock without queueing, so that the lock word stays as the running
// lockers need it, and after the spin threshold it waits outside the gate
// again and spins once more when admitted. It reports whether it took the
// lock; false means it must queue: it has waited for starveAfter, a fair
// queue head has closed the lock to stealers (pending), or the PV locks may
// not halt, and its waiting outside would be a halt.
func (l *Lock) contend(st *lockcore.Stats, start int64) bool {
	for {
		sp, stride := l.spinner(true), contendStride
		if sp.OnVCPU() {
			stride = contendStrideVCPU
		}
	spin:
		for {
			v := l.word.Load()
			// step: contend-trylock
			if v&lockedPendingMask == 0 && l.word.CompareAndSwap(v, v|lockedVal) {
				return true
			}
			if v&pendingVal != 0 {
				break
			}
			// One look every stride spins, no more.
			for range stride {
				if !sp.Spin() {
					break spin
				}
			}
		}
		if l.word.Load()&pendingVal != 0 || now()-start >= starveAfter || !lockcore.PVSpin.Load() {
			return false
		}
		// step: contend-demote
		l.gate.Demote((*gated)(l), st, &gateEvents)
	}
}

// steal is pv_hybrid_queued_unfair_trylock, bounded: take a free lock
// while there is a queue whose head is not actively spinning (pending
// clear), for at most threshold polls. Pending, set by a spinning head,
// closes the window, so a running head is never starved by stealers.
func (l *Lock) steal() bool {
	for sp := l.spinner(true); ; {
		v := l.word.Load()
		// step: steal
		if v&lockedPendingMask == 0 && l.word.CompareAndSwap(v, v|lockedVal) {
			// Not sp.Acquired: a steal that succeeds says the lock is
			// often free, not that queued waiters should spin longer.
			return true
		}
		if v&tailMask == 0 || v&pendingVal != 0 || !sp.Spin() {
			return false
		}
	}
}

// stealOnce is one attempt of steal: take the lock if neither held nor
// pending, whatever the queue.
func (l *Lock) stealOnce() bool {
	v := l.word.Load()
	return v&lockedPendingMask == 0 && l.word.CompareAndSwap(v, v|lockedVal)
}

// queue is the MCS part of the slow path, shared by the native and PV
// variants (queue: / pv_queue: in qspinlock.c).
//
// since is when a PV waiter began to wait (0: now), from which its
// starvation as queue head counts (starveAfter).
func (l *Lock) queue(since int64) {
	n, w := getNode()
	if n == nil {
		l.lockNoNode()
		return
	}
	pv := l.mode != ModeNative
	slot := w.Slot
	n.locked.Store(0)
	n.next.Store(nil)
	n.state.Store(stateRunning)
	// The lock may have been released while we fetched the node.
	// step: node-trylock
	if l.word.Load() == 0 && l.word.CompareAndSwap(0, lockedVal) {
		putNode(n)
		return
	}
	l.count(slot, evLockSlowpath)

	// Publish the node as the new tail (xchg_tail, whole-word form). The
	// node's fields were reset above with atomic stores, which are ordered
	// before this CAS (the kernel's smp_wmb).
	tail := encodeTail(n.id)
	var old uint32
	for {
		old = l.word.Load()
		// step: xchg-tail
		if l.word.CompareAndSwap(old, old&lockedPendingMask|tail) {
			break
		}
	}
	if old&tailMask != 0 {
		prev := nodeAt(decodeTail(old))
		// step: link-prev
		prev.next.Store(n)
		if pv {
			l.pvWaitNode(n, prev, w)
		} else {
			for i := uint32(1); n.locked.Load() == 0; i++ {
				lockcore.Pause(i)
			}
		}
	}

	// We are the queue head: wait for the owner and the pending waiter
	// to go away (native), or spin and halt until we hold the lock (PV).
	var val uint32
	if pv {
		val = l.pvWaitHeadOrLock(n, w, since)
	} else {
		for i := uint32(1); ; i++ {
			if val = l.word.Load(); val&lockedPendingMask == 0 {
				break
			}
			lockcore.Pause(i)
		}
	}
	l.claim(n, tail, val, pv)
	putNode(n)
}

// claim finishes the acquisition by the queue head (the locked: label):
// val is the word the head saw when the lock became its own (PV: with
// locked set) or free (native: locked and pending clear).
func (l *Lock) claim(n *qnode, tail, val uint32, pv bool) {
	if val&tailMask == tail {
		// We are the last node: n,0,0 -> 0,0,1 (PV: n,0,1 -> 0,0,1).
		// step: claim-last
		if l.word.CompareAndSwap(val, lockedVal) {
			return
		}
	}
	// Either somebody queued behind us, or a native contender set pending;
	// that contender saw our tail and queues behind us, so next appears.
	if !pv {
		l.word.Or(lockedVal) // set_locked: nobody else may take it now
	}
	next := n.next.Load()
	// step: wait-next
	for i := uint32(1); next == nil; i++ {
		lockcore.Pause(i) // a preemption point every lockcore.SpinPollEvery polls
		next = n.next.Load()
	}
	// step: hand-head
	next.locked.Store(1) // arch_mcs_spin_unlock_contended: next is queue head
	if pv {
		l.pvKickNode(next)
	}
}

// lockNoNode is the kernel's lock_no_node fallback for a goroutine that
// found no free queue node (more than MaxPooledWaiters goroutines queued
// at once): spin on a trylock, yielding the processor now and then. A
// pinned vCPU thread has its own node and does not come here.
func (l *Lock) lockNoNode() {
	for i := uint32(1); ; i++ {
		if l.word.Load() == 0 && l.word.CompareAndSwap(0, lockedVal) {
			break
		}
		// A PV lock lets node-less waiters steal like any locker;
		// the native head's claim relies on nobody stealing.
		if l.mode == ModePV && l.stealOnce() {
			break
		}
		if i%64 == 0 {
			runtime.Gosched()
		} else {
			relax.Pause(1)
		}
	}
	l.count(kick.GoroutineSlot, evLockNoNode)
}

// count adds one to a slow-path event. Slow-path events are counted even
// with statistics off (pvlock.Policy.Stats): they cost nothing next to a wait,
// and the halt watchdog's findings must never go unseen.
func (l *Lock) count(slot, ev int) {
	l.stats().Inc(slot, ev)
}
