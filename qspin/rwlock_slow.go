package qspin

import (
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// rwHeads holds the halted queue heads of every RWLock, keyed by the lock
// (tag 0): a lock has at most one head, the holder of its wait lock.
var rwHeads kick.Table

// Roles of a queue head: what it waits for on the count word.
const (
	roleReader = iota // the writer to leave: locked clear
	roleWriter        // everyone to leave: the word is W alone
)

// rlockSlow is queued_read_lock_slowpath, entered with the reader's count
// and its read acquisition added and a writer bit found. The acquisition
// stays counted: the reader gets the lock.
func (l *RWLock) rlockSlow() {
	// Take the count back before queueing: a writer at the queue head
	// waits for the readers to leave, and this count may be the last of
	// them, so it leaves as an RUnlock does.
	// step: read-unbias
	l.readerLeft(l.word.Add(rwUnbias), true)
	l.stats().Inc(-1, evReadSlowpath)
	// A goroutine sleeps outside the queue while the queue is taken, as a
	// reader of sync.RWMutex sleeps until the writer leaves.
	// step: read-queue
	l.wait.lockPassive()
	// As queue head, add the count again: from now on no writer enters
	// (the fast path needs a zero word, the slow path the wait lock), so
	// the reader waits for the one writer inside, if any.
	// step: read-rebias
	if l.word.Add(rwBias)&rwLocked != 0 {
		l.headWait(roleReader)
	}
	// Let the next waiter be head: a writer will set W and wait for us
	// and the other readers inside; a reader will enter beside us.
	// step: read-dequeue
	l.wait.Unlock()
}

// lockSlow is queued_write_lock_slowpath: the word was not free.
func (l *RWLock) lockSlow() {
	l.stats().Inc(-1, evWriteSlowpath)
	// step: write-queue
	l.wait.Lock()
	// The lock may have become free while we queued.
	// step: write-trylock
	if l.word.Load() != 0 || !l.word.CompareAndSwap(0, rwLocked) {
		// Close the lock to new readers, then wait for those inside.
		// step: write-waiting
		l.word.Or(rwWaiting)
		l.headWait(roleWriter)
	}
	// step: write-dequeue
	l.wait.Unlock()
}

// headWait is the queue head's wait on the count word, as role (holding
// the wait lock): until the writer leaves (reader) or until the word is W
// alone, which the writer then turns into locked (writer). It spins for
// the lock's threshold, and in the PV variants then halts, published in
// rwHeads with H set, until the release that may let it in kicks it.
func (l *RWLock) headWait(role int) {
	if !l.wait.PV() {
		// Native and TAS: the kernel's atomic_cond_read, a plain spin.
		for i := uint32(1); !l.headTry(role); i++ {
			lockcore.Pause(i)
		}
		return
	}
	// The waiter is taken only now: the wait lock's own waits, which
	// use the caller's waiter too, are over.
	w := kick.Get()
	defer kick.Put(w)
	vcpu := lockcore.Of(w) != nil
	st := l.stats()
	key := lockcore.Key(l)
	for {
		canHalt := lockcore.PVSpin.Load()
		// Nobody overtakes the head, so a vCPU spins as a waiter of a lock
		// without stealing does. A goroutine halts at once (unless the
		// lock's threshold is fixed), as the waiters of sync.RWMutex sleep
		// at once: its processor then runs the holder it waits for, or
		// that holder's next work, on a warm cache.
		spins := vcpu || !canHalt || l.wait.spin.Fixed()
		for sp := l.wait.spin.Spinner(canHalt, false); ; {
			// step: rw-head-try
			if l.headTry(role) {
				sp.Acquired()
				return
			}
			if !spins || !sp.Spin() {
				break
			}
		}
		if !canHalt {
			continue
		}
		// Lost wakeup, arm: arm before publishing, so that a kick sent
		// once we are found is never erased.
		// step: rw-arm
		w.Arm()
		// step: rw-publish
		rwHeads.Publish(w, key, 0)
		// Lost wakeup, count word: H is set by an atomic RMW, whose
		// result is our re-check. A release RMW ordered before it shows
		// in that result; one ordered after it finds H in its own result
		// and kicks us, and finds us published, since we published
		// before setting H.
		// step: rw-flag
		v := l.word.Or(rwHalted)
		// step: rw-recheck
		if !headReady(role, v) {
			st.Inc(w.Slot, haltEvent(role))
			// step: rw-halt
			lockcore.Halt(st, w, rwHaltEvents, func() bool { return headReady(role, l.word.Load()) })
		}
		// A kick, a spurious wake-up or a re-check that found the way
		// open: look again. H stays set until the head leaves, so a
		// release between this Withdraw and the next Publish finds
		// nobody to kick; the next round's re-check sees it.
		rwHeads.Withdraw(w)
	}
}

// headReady reports whether a queue head of role may go in, the count
// word being v: no writer (reader), or nobody but the head (writer).
func headReady(role int, v uint32) bool {
	if role == roleReader {
		return v&rwLocked == 0
	}
	return v&^rwHalted == rwWaiting
}

// headTry is the head's attempt to go in: it reports true once the head
// holds the lock, H cleared. A reader holds it already (its count is in)
// once the writer left; a writer takes it from W alone by CAS, which
// clears W and H at once (the readers that enter meanwhile have added
// their count and will take it back, so the CAS fails and we look again).
func (l *RWLock) headTry(role int) bool {
	v := l.word.Load()
	if !headReady(role, v) {
		return false
	}
	if role == roleReader {
		if v&rwHalted != 0 {
			// step: rw-clear
			l.word.And(^rwHalted)
		}
		return true
	}
	// step: write-claim
	return l.word.CompareAndSwap(v, rwLocked)
}

// readerLeft finishes the subtraction of a reader's count whose result
// is v: RUnlock, and readers that added their count and found a writer.
// If that was the last count a waiting writer head waited for, and the
// head is halted (H), kick it. A result whose readers field is all ones
// is an RUnlock of a lock that was not read-locked, unless ours says the
// count subtracted was known to be the caller's own.
func (l *RWLock) readerLeft(v uint32, ours bool) {
	if v&rwReaders == rwReaders && !ours {
		l.word.Add(rwBias) // leave the lock as it was
		panic("qspin: RUnlock of unlocked RWLock")
	}
	// step: read-kick-check
	if v&rwHalted != 0 && v&(rwReaders|rwLocked) == 0 {
		l.kickHead(evReadKicks)
	}
}

// runlockSlow is the rest of an RUnlock whose result v has H set or a
// readers field of all ones.
func (l *RWLock) runlockSlow(v uint32) { l.readerLeft(v, false) }

// unlockSlow is the rest of Unlock: the release of a word that holds more
// than the writer (readers queueing at the head, W, H), and the batch-th
// release, which also adds the lock's writes to the statistics. The lock
// is still held, unless this is an Unlock of a lock that is not
// write-locked.
func (l *RWLock) unlockSlow() {
	n := l.writes // read while we still hold the lock
	for {
		v := l.word.Load()
		if v&rwLocked != rwLocked {
			l.writes-- // nothing was written but the count: take it back
			panic("qspin: Unlock of unlocked RWLock")
		}
		// Release by CAS, never by a blind store: a head that sets H
		// after our load makes the CAS fail, and we see H.
		// step: write-release
		if l.word.CompareAndSwap(v, v-rwLocked) {
			// step: write-kick-check
			if v&rwHalted != 0 {
				// The head waits for the writer to leave (a reader) or
				// for everyone to (a writer: readers still inside kick
				// it again as they leave).
				l.kickHead(evWriteKicks)
			}
			break
		}
	}
	// Counted after the release, so that the count never lengthens a
	// critical section.
	if n%batch == 0 && lockcore.StatsOn.Load() {
		l.stats().AddHint(uint32(lockcore.Key(l)>>6), evWriteAcquisitions, batch)
	}
}

// flushReads adds batch read acquisitions to the statistics. It is kept
// out of line so that RLock, which calls it every batch-th time, inlines.
//
//go:noinline
func (l *RWLock) flushReads() {
	if lockcore.StatsOn.Load() {
		l.stats().AddHint(lockstat.StripeHint(), evReadAcquisitions, batch)
	}
}

// kickHead kicks the lock's halted queue head, if it is published, and
// counts the kick as ev. The releaser touches only the table after its
// release: the head may have gone in already, and a kick of a waiter that
// has moved on is a spurious wake-up, which every wait tolerates.
func (l *RWLock) kickHead(ev int) {
	// step: rw-kick
	kicked, asleep, _ := rwHeads.KickWaiter(lockcore.Key(l), 0)
	if kicked == nil {
		return
	}
	l.stats().Inc(-1, ev)
	// The head goes in once it runs: if it is a vCPU that shares our CPU,
	// make way. A parked goroutine is not yielded to: as with
	// sync.RWMutex's wake-ups, it runs next on our P once we block, or on
	// an idle P that takes it.
	if asleep && kicked.Backend() != kick.Park {
		lockcore.YieldTo(kicked)
	}
}
