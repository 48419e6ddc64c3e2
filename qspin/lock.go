package qspin

import (
	"sync/atomic"
	"unsafe"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
)

// Lock is a queued spinlock. The zero value is an unlocked PV lock with
// lock stealing. A Lock must not be copied after first use.
//
// In the terminology of the Go memory model, the n'th call to Unlock
// “synchronizes before” the m'th call to Lock for any n < m. A successful
// call to TryLock is equivalent to a call to Lock. A failed call to TryLock
// does not establish any “synchronizes before” relation at all.
type Lock struct {
	_    lockcore.NoCopy
	word atomic.Uint32
	// releases counts the lock's releases. Only the holder writes it,
	// just before it releases, so it needs no atomic: it lives in the
	// lock's own cache line, which the holder has just written anyway.
	releases uint32
	mode     Mode          // fixed before first use
	spin     lockcore.Spin // the PV spin threshold
	// gate restricts which waiters enter the slow path (PV only; see
	// lockcore.Gate): the others wait outside, with no node queued.
	gate       lockcore.Gate
	unrestrict bool            // NoRestriction: every waiter enters
	named      *lockstat.Named // Name: the statistics of the lock's name, one per mode
}

// spinner starts a PV spin phase: a lock with stealing spins briefly, its
// waiters being overtaken anyway (lockcore.Spin.Spinner).
func (l *Lock) spinner(canHalt bool) lockcore.Spinner {
	return l.spin.Spinner(canHalt, l.mode == ModePV)
}

// Lock acquires the lock, waiting as its variant does. The fast path is
// the one compare-and-swap of a free word; it is small enough to be
// inlined into the caller.
func (l *Lock) Lock() {
	// step: fast-cas
	if !l.word.CompareAndSwap(0, lockedVal) {
		l.lockSlow()
	}
}

// lockSlow is the outlined rest of Lock: the word was not free.
func (l *Lock) lockSlow() { l.lockSlowAs(false) }

// lockPassive is Lock for a waiter that has found its way barred once
// already (an RWLock's reader behind a writer): in the PV variants a
// goroutine waits outside the gate while the lock is held, rather than
// spin (lockcore.Gate.EnterPassive).
func (l *Lock) lockPassive() {
	if !l.word.CompareAndSwap(0, lockedVal) {
		l.lockSlowAs(true)
	}
}

// lockSlowAs is the slow path of Lock and of lockPassive (passive).
func (l *Lock) lockSlowAs(passive bool) {
	defer lockcore.ContentionEnd(lockcore.ContentionStart(l, l.stats())) // the contention profile and lockup detector
	switch l.mode {
	case ModeNative:
		l.lockNative()
	case ModeTAS:
		l.lockTAS()
	default:
		l.lockPV(passive)
	}
}

// TryLock acquires the lock if nobody holds it or waits for it, and
// reports whether it did. It never waits and never succeeds while the
// lock is held (queued_spin_trylock).
func (l *Lock) TryLock() bool {
	return l.word.Load() == 0 && l.word.CompareAndSwap(0, lockedVal)
}

// batch is how many releases of one lock are added to the acquisitions
// counter at a time: every batch-th Unlock takes the outlined path and
// adds batch, so the counter is written once per batch acquisitions of a
// lock, never on every one by locks on different CPUs.
const batch = 1024

// Unlock releases the lock. Unlocking an unlocked Lock panics, with a
// panic that can be recovered (sync.Mutex throws a fatal error instead).
// A Lock is not tied to a goroutine: one goroutine may lock it and another
// unlock it.
func (l *Lock) Unlock() { l.unlock((*Lock).unlockOutlined) }

// unlock is the fast path of Unlock: it counts the release in the lock and
// releases a word that has nothing but the locked byte set with one
// compare-and-swap, then looks at the gate with one load. It is passed
// its outlined rest as a parameter, which the inliner charges as cheap, so
// that it and Unlock are inlined into the caller. outlined is told whether
// the lock is still held (whether the fast path left the release to it),
// and the count of releases this one makes, read while it was.
func (l *Lock) unlock(outlined func(*Lock, bool, uint32)) {
	n := l.releases + 1
	l.releases = n
	// l.word.CompareAndSwap spelled as the intrinsic on the word's only
	// field (at offset 0), which costs the inliner less than the method.
	// Lost wakeup, gate: the gate is read after the release (see
	// lockcore.Gate).
	// step: unlock-fast
	if held := n%batch == 0 || !atomic.CompareAndSwapUint32((*uint32)(unsafe.Pointer(&l.word)), lockedVal, 0); held || l.gate.Waiting() {
		// step: unlock-gate-check
		outlined(l, held, n)
	}
}

// Unlock uses the word through its address as a plain uint32: this fails
// to compile if the word leaves offset 0 or atomic.Uint32 holds more than
// its value.
var _ = [1]struct{}{}[unsafe.Offsetof(Lock{}.word)+unsafe.Sizeof(Lock{}.word)-4]

// unlockOutlined is the rest of Unlock; n is the release's count. If
// held, the fast path wrote nothing but the count, and here are the
// release of a lock with waiters, a SLOW lock or one that is not held, and
// the batch-th release; then, as when the fast path released the lock
// itself, the gate's part of the release for passive waiters.
func (l *Lock) unlockOutlined(held bool, n uint32) {
	if held {
		if l.word.Load()&lockedMask == 0 {
			// Nothing but the count was written: take it back, so that a
			// refused Unlock leaves the lock as it was.
			l.releases--
			panic("qspin: unlock of unlocked lock")
		}
		l.release()
		// Counted after the release, so that the count never lengthens a
		// critical section. The stripe is picked by the lock's address, so
		// different locks flush to different lines.
		if n%batch == 0 && lockcore.StatsOn.Load() {
			l.stats().AddHint(uint32(lockcore.Key(l)>>6), evAcquisitions, batch)
		}
	}
	if l.gate.Waiting() {
		// step: unlock-gate
		l.gate.Released(n, l.stats(), &gateEvents)
	}
}

func (l *Lock) release() {
	if l.word.CompareAndSwap(lockedVal, 0) {
		return // nobody waits and the lock is not SLOW
	}
	switch l.mode {
	case ModeNative:
		// Clear only the locked field: pending and tail belong to the
		// waiters.
		if old := l.word.And(^lockedMask); old&lockedMask == 0 {
			panic("qspin: unlock of unlocked lock")
		}
	case ModeTAS:
		panic("qspin: unlock of unlocked lock")
	default:
		l.unlockPV()
	}
}

// IsLocked reports whether the lock is held.
func (l *Lock) IsLocked() bool { return l.word.Load()&lockedMask != 0 }

// IsContended reports whether goroutines wait for the lock: the pending
// bit or a queue tail is set (the kernel's queued_spin_is_contended), or
// waiters wait at the gate. It is two atomic loads. A TAS lock keeps no record of its waiters and always
// reports false.
func (l *Lock) IsContended() bool { return l.word.Load()&^lockedMask != 0 || l.gate.Passive() != 0 }

// lockTAS is virt_spin_lock: wait for a free word, then try to take it.
func (l *Lock) lockTAS() {
	for {
		for i := uint32(1); l.word.Load() != 0; i++ {
			lockcore.Pause(i)
		}
		if l.word.CompareAndSwap(0, lockedVal) {
			return
		}
	}
}

// gated is the lock as its gate sees it (lockcore.Gated).
type gated Lock

// MarkPassive does nothing: every release of a queued lock looks at the
// gate (unlock-gate-check).
func (*gated) MarkPassive() {}

// Free reports whether nobody holds the lock.
func (g *gated) Free() bool { return !(*Lock)(g).IsLocked() }

// stats returns the statistics the lock counts in (lockcore.LockStats).
func (l *Lock) stats() *lockcore.Stats { return lockcore.LockStats(l.named, modeStats[:], l.mode) }
