package qspin

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// RWLock is a queued reader-writer lock, the kernel's qrwlock
// (kernel/locking/qrwlock.c), a drop-in for sync.RWMutex: any number of
// readers or one writer hold it. The zero value is an unlocked PV lock;
// NewRW selects another variant with the options of New. An RWLock must
// not be copied after first use.
//
// Readers and writers that cannot take the lock at once queue on a Lock
// of the same variant, the wait lock: queued waiters spin, halt and are
// kicked, and pass its concurrency restriction, exactly as the waiters of
// a Lock do. Only the queue head waits on the lock's count word, and in
// the PV variants it too halts after its spin threshold, to be kicked by
// the reader or writer whose release lets it in, instead of spinning a
// whole time slice behind a preempted holder.
//
// Neither side starves the other:
//
//   - A writer that reaches the head of the queue sets the waiting bit,
//     after which no reader enters: it waits only for the readers already
//     inside.
//   - A reader at the head of the queue has added its count, after which
//     no writer enters: it waits only for the one writer inside.
//   - Before that, both wait in the wait lock's queue, with the bounds of
//     a Lock: FIFO among queued waiters, overtaken by running lockers (PV)
//     for at most a millisecond before its head closes the lock to them,
//     and admitted past its restriction within its fairness bound.
//
// Readers that arrive while no writer is at the queue head take the lock
// with one atomic add and never touch the queue. As with sync.RWMutex, a
// reader must not read-lock again while it holds the lock: once a writer
// waits, the second RLock waits for the writer, which waits for the first
// read lock to be released.
//
// In the terminology of the Go memory model, the n'th call to Unlock
// “synchronizes before” the m'th call to Lock for any n < m, just as for
// Lock. For any call to RLock, there exists an n such that the n'th call
// to Unlock “synchronizes before” that call to RLock, and the
// corresponding call to RUnlock “synchronizes before” the n+1'th call to
// Lock. A successful TryLock or TryRLock is equivalent to Lock or RLock; a
// failed one establishes no “synchronizes before” relation at all.
//
// At most 2^22 - 2 read locks may be held at once.
type RWLock struct {
	_ lockcore.NoCopy
	// word is the count word (see the layout below). It is at offset 0.
	word atomic.Uint32
	// reads counts the lock's read acquisitions, added to the statistics
	// batch at a time. It shares the word's cache line, which every
	// reader has just written.
	// It is a plain uint32 used only through sync/atomic's functions,
	// which cost the inliner less than the methods of atomic.Uint32.
	reads uint32
	// writes counts the lock's write releases. Only the writer writes it,
	// while it holds the lock, so it needs no atomic (see Lock.releases).
	writes uint32
	// wait is the queue of readers and writers that cannot take the lock
	// at once (the kernel's wait_lock). Its options are the RWLock's.
	wait Lock
}

// The count word, the kernel's qrwlock cnts in whole-word form:
//
//	31   30                              9    8    7          0
//	+----+--------------------------------+----+------------+
//	| H  | readers                        | W  | locked     |
//	+----+--------------------------------+----+------------+
//
//	locked   0xff: a writer holds the lock (_QW_LOCKED)
//	W        a writer at the queue head waits (_QW_WAITING): new readers
//	         queue instead of entering
//	readers  read locks held, plus readers that have added their count
//	         and not yet found a writer bit (_QR_BIAS each)
//	H        halted: the queue head has published itself to be kicked
//	         (PV). A release that finds H in its result and may have let
//	         the head in kicks it. Only the head sets and clears H.
const (
	rwLocked  uint32 = 0xff                 // _QW_LOCKED
	rwWaiting uint32 = 1 << 8               // _QW_WAITING
	rwWMask          = rwLocked | rwWaiting // _QW_WMASK
	rwShift          = 9                    // _QR_SHIFT
	rwBias    uint32 = 1 << rwShift         // _QR_BIAS
	rwUnbias         = ^(rwBias - 1)        // adds -rwBias
	rwHalted  uint32 = 1 << 31
	rwReaders        = rwHalted - rwBias // the readers field
	// rwUnlockSlow: an RUnlock whose result is at least this has work
	// left, H set or a readers field of all ones, which no lock holding
	// fewer than rwMaxReaders read locks reaches except by an RUnlock of a
	// lock that was not read-locked (the borrow of that subtraction sets
	// the field to all ones and flips H).
	rwUnlockSlow = rwReaders
	rwMaxReaders = rwReaders>>rwShift - 1
)

// RUnlock and Unlock use the word through its address as a plain uint32:
// this fails to compile if the word leaves offset 0.
var _ = [1]struct{}{}[unsafe.Offsetof(RWLock{}.word)+unsafe.Sizeof(RWLock{}.word)-4]

// NewRW returns an unlocked RWLock configured by opts, the options of New:
// PV with stealing by default, Native, TAS or NoStealing for the other
// variants, SpinThreshold and SpinDuration for the PV spin before a halt,
// NoRestriction to let every waiter into the wait lock's queue. The
// options configure the wait lock, and the queue head's wait on the count
// word follows them.
func NewRW(opts ...Option) *RWLock {
	l := new(RWLock)
	for _, o := range opts {
		o(&l.wait)
	}
	return l
}

// Mode reports the lock's variant.
func (l *RWLock) Mode() Mode { return l.wait.mode }

// PV reports whether l is a PV variant (with or without stealing).
func (l *RWLock) PV() bool { return l.wait.PV() }

// RLock locks l for reading: one atomic add of a reader's count, which
// holds the lock unless a writer holds it or waits at the queue head
// (queued_read_lock), and the count of the acquisition in the lock. The
// fast path is small enough to be inlined.
func (l *RWLock) RLock() { l.rlock((*RWLock).rlockOutlined) }

// rlock is the fast path of RLock. One call covers both the slow path and
// the batch-th acquisition, which adds the lock's reads to the statistics.
// It is passed that call as a parameter, which the inliner charges as
// cheap (see Lock.unlock), so that it and RLock are inlined.
func (l *RWLock) rlock(outlined func(*RWLock, uint32)) {
	// step: read-fast
	if v := atomic.AddUint32((*uint32)(unsafe.Pointer(&l.word)), rwBias); v&rwWMask != 0 || atomic.AddUint32(&l.reads, 1)%batch == 0 {
		outlined(l, v)
	}
}

// rlockOutlined is the rest of an RLock whose add returned v: the slow
// path if v has a writer bit, else the batch-th acquisition's flush.
func (l *RWLock) rlockOutlined(v uint32) {
	if v&rwWMask != 0 {
		l.rlockSlow()
		return
	}
	l.flushReads()
}

// countRead counts a read acquisition in the lock, and every batch-th in
// the statistics.
func (l *RWLock) countRead() {
	if atomic.AddUint32(&l.reads, 1)%batch == 0 {
		l.flushReads()
	}
}

// TryRLock read-locks l if no writer holds it or waits at the queue head,
// and reports whether it did (queued_read_trylock). It never waits.
func (l *RWLock) TryRLock() bool {
	if l.word.Load()&rwWMask != 0 {
		return false
	}
	if l.word.Add(rwBias)&rwWMask != 0 {
		// A writer came first: take the count back, which may be the
		// one a waiting writer head waits for.
		l.readerLeft(l.word.Add(rwUnbias), true)
		return false
	}
	l.countRead()
	return true
}

// RUnlock undoes one RLock: one atomic subtraction of the reader's count
// (queued_read_unlock). RUnlock of a lock that is not read-locked panics,
// as with sync.RWMutex. The fast path is small enough to be inlined.
func (l *RWLock) RUnlock() {
	// step: read-unlock
	if v := atomic.AddUint32((*uint32)(unsafe.Pointer(&l.word)), rwUnbias); v >= rwUnlockSlow {
		l.runlockSlow(v)
	}
}

// Lock locks l for writing: one compare-and-swap of a free word
// (queued_write_lock). The fast path is small enough to be inlined.
func (l *RWLock) Lock() {
	// step: write-fast
	if !atomic.CompareAndSwapUint32((*uint32)(unsafe.Pointer(&l.word)), 0, rwLocked) {
		l.lockSlow()
	}
}

// TryLock write-locks l if nobody holds it or waits for it, and reports
// whether it did (queued_write_trylock). It never waits.
func (l *RWLock) TryLock() bool {
	return l.word.Load() == 0 && l.word.CompareAndSwap(0, rwLocked)
}

// Unlock undoes Lock. Unlocking a lock that is not write-locked panics, as
// with sync.RWMutex. As with sync.RWMutex, an RWLock is not tied to a
// goroutine: one goroutine may lock it and another unlock it. The fast
// path, a compare-and-swap of a word holding nothing but the writer,
// is small enough to be inlined; the batch-th release, and one with
// readers or a halted queue head waiting, take the outlined path.
func (l *RWLock) Unlock() {
	l.writes++
	// step: write-unlock-fast
	if l.writes%batch == 0 || !atomic.CompareAndSwapUint32((*uint32)(unsafe.Pointer(&l.word)), rwLocked, 0) {
		l.unlockSlow()
	}
}

// RLocker returns a sync.Locker that locks and unlocks l for reading.
func (l *RWLock) RLocker() sync.Locker { return (*rlocker)(l) }

// rlocker is an RWLock seen as a sync.Locker of its read side.
type rlocker RWLock

// Lock read-locks the RWLock.
func (r *rlocker) Lock() { (*RWLock)(r).RLock() }

// Unlock read-unlocks the RWLock.
func (r *rlocker) Unlock() { (*RWLock)(r).RUnlock() }

// IsLocked reports whether the lock is held for writing.
func (l *RWLock) IsLocked() bool { return l.word.Load()&rwLocked != 0 }

// Readers returns the number of read locks held, counting readers that
// are about to find a writer and queue. It is one atomic load.
func (l *RWLock) Readers() int { return int(l.word.Load() & rwReaders >> rwShift) }
