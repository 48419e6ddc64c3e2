package qspin

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
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
// Goroutines that are not vCPUs wait as those of sync.RWMutex do: a
// queue head halts at once rather than spin, and a reader that finds a
// writer and the queue taken waits outside the wait lock's gate. Its
// processor then runs the writer, or the writer's next work, on a warm
// cache, instead of a second CPU taking the count word's line from it.
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
	// word is the count word (see the layout below), and above it the
	// lock's read acquisitions. It is at offset 0.
	word rwWord
	// writes counts the lock's write releases. Only the writer writes it,
	// while it holds the lock, so it needs no atomic (see Lock.releases).
	writes uint32
	// wait is the queue of readers and writers that cannot take the lock
	// at once (the kernel's wait_lock). Its options are the RWLock's.
	wait Lock
	// named is the statistics of the lock's name (Name), one per mode.
	named *lockstat.Named
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

// The read count. The count word is the low half of a 64-bit word whose
// high half counts the lock's read acquisitions, modulo 2^32:
//
//	63                          32 31                           0
//	+-----------------------------+------------------------------+
//	| read acquisitions           | count word (above)           |
//	+-----------------------------+------------------------------+
//
// RLock adds its reader's count and one read acquisition with the same
// atomic add, so counting a read costs no second atomic and touches no
// other cache line. The batch-th acquisition (its result's high half a
// multiple of batch) adds batch to the statistics. Only a reader's add and
// the subtraction of a misused RUnlock's borrow change the high half; every
// other operation keeps it.
const (
	rwReadOne     uint64 = 1 << 32                    // one read acquisition
	rwReadAcquire        = rwReadOne | uint64(rwBias) // RLock's add
	rwReadRelease        = ^uint64(rwBias - 1)        // RUnlock's add: -rwBias
	rwBatchMask          = (batch - 1) << 32          // zero at every batch-th read
)

// rwWord is the 64-bit word of an RWLock: the count word in its low half,
// the read acquisitions in its high half (see the layout above). Its
// methods operate on the count word and keep the high half, except where
// they say otherwise; the fast paths use the word through its address.
type rwWord struct{ v atomic.Uint64 }

// Load returns the count word.
func (w *rwWord) Load() uint32 { return uint32(w.v.Load()) }

// Add adds d, a signed 32-bit delta (rwBias or rwUnbias), to the count
// word and returns the new count word. A delta that borrows from the
// count word (a misused RUnlock) borrows from the high half too, and the
// opposite delta carries it back.
func (w *rwWord) Add(d uint32) uint32 { return uint32(w.v.Add(uint64(int64(int32(d))))) }

// Or sets the bits of m in the count word and returns the old count word.
func (w *rwWord) Or(m uint32) uint32 { return uint32(w.v.Or(uint64(m))) }

// And clears the bits of the count word that m does not have and returns
// the old count word.
func (w *rwWord) And(m uint32) uint32 { return uint32(w.v.And(uint64(m) | ^uint64(1<<32-1))) }

// CompareAndSwap replaces a count word equal to old with new, keeping the
// high half, and reports whether it did. A concurrent read acquisition
// that leaves the count word as it was makes it try again.
func (w *rwWord) CompareAndSwap(old, new uint32) bool {
	for {
		x := w.v.Load()
		if uint32(x) != old {
			return false
		}
		if w.v.CompareAndSwap(x, x&^(1<<32-1)|uint64(new)) {
			return true
		}
	}
}

// reads returns the read acquisitions counted in the high half, modulo
// 2^32.
func (w *rwWord) reads() uint32 { return uint32(w.v.Load() >> 32) }

// The fast paths use the word through its address as a plain uint64: this
// fails to compile if the word leaves offset 0 or holds more than 8 bytes.
var _ = [1]struct{}{}[unsafe.Offsetof(RWLock{}.word)+unsafe.Sizeof(RWLock{}.word)-8]

// NewRW returns an unlocked RWLock configured by opts, the options of New:
// PV with stealing by default, Native, TAS or NoStealing for the other
// variants, SpinThreshold and SpinDuration for the PV spin before a halt,
// NoRestriction to let every waiter into the wait lock's queue. The
// options configure the wait lock, and the queue head's wait on the count
// word follows them.
func NewRW(opts ...Option) *RWLock {
	l := new(RWLock)
	l.init(opts)
	return l
}

// init applies opts to the new lock l.
func (l *RWLock) init(opts []Option) {
	for _, o := range opts {
		o(&l.wait)
	}
	if l.wait.named != nil {
		// Name: the wait lock counts under the name, and so do the
		// reader-writer lock's own events.
		l.named = lockstat.NameStats(rwModeStats[:], l.wait.named.Mode(0).Name())
	}
}

// Mode reports the lock's variant.
func (l *RWLock) Mode() Mode { return l.wait.mode }

// PV reports whether l is a PV variant (with or without stealing).
func (l *RWLock) PV() bool { return l.wait.PV() }

// RLock locks l for reading: one atomic add of a reader's count, which
// holds the lock unless a writer holds it or waits at the queue head
// (queued_read_lock), and of a read acquisition to the count above the
// word. The fast path is small enough to be inlined.
func (l *RWLock) RLock() { l.rlock((*RWLock).rlockOutlined) }

// rlock is the fast path of RLock. One call covers both the slow path and
// the batch-th acquisition, which adds batch reads to the statistics. It
// is passed that call as a parameter, which the inliner charges as cheap
// (see Lock.unlock), so that it and RLock are inlined.
func (l *RWLock) rlock(outlined func(*RWLock, uint64)) {
	// step: read-fast
	if v := atomic.AddUint64((*uint64)(unsafe.Pointer(&l.word)), rwReadAcquire); v&uint64(rwWMask) != 0 || v&rwBatchMask == 0 {
		outlined(l, v)
	}
}

// rlockOutlined is the rest of an RLock whose add returned v: the slow
// path if v has a writer bit, and the batch-th acquisition's flush once
// the lock is read-locked. A reader that takes the slow path was counted
// by its add, and reaches the lock.
func (l *RWLock) rlockOutlined(v uint64) {
	if uint32(v)&rwWMask != 0 {
		l.rlockSlow()
	}
	if v&rwBatchMask == 0 {
		l.flushReads()
	}
}

// TryRLock read-locks l if no writer holds it or waits at the queue head,
// and reports whether it did (queued_read_trylock). It never waits.
func (l *RWLock) TryRLock() bool {
	if l.word.Load()&rwWMask != 0 {
		return false
	}
	if v := l.word.v.Add(rwReadAcquire); uint32(v)&rwWMask != 0 {
		// A writer came first: take the count and the acquisition back
		// (the next reader to reach this count flushes it, if it is a
		// batch-th), which may be the count a waiting writer head waits
		// for.
		l.readerLeft(uint32(l.word.v.Add(^(rwReadAcquire - 1))), true)
		return false
	} else if v&rwBatchMask == 0 {
		l.flushReads()
	}
	return true
}

// RUnlock undoes one RLock: one atomic subtraction of the reader's count
// (queued_read_unlock). RUnlock of a lock that is not read-locked panics,
// as with sync.RWMutex. The fast path is small enough to be inlined.
func (l *RWLock) RUnlock() {
	// step: read-unlock
	if v := uint32(atomic.AddUint64((*uint64)(unsafe.Pointer(&l.word)), rwReadRelease)); v >= rwUnlockSlow {
		l.runlockSlow(v)
	}
}

// Lock locks l for writing: one compare-and-swap of a free count word
// (queued_write_lock), which keeps the read count above it. The fast path
// is small enough to be inlined.
func (l *RWLock) Lock() { l.lock((*RWLock).lockSlow) }

// lock is the fast path of Lock: a load, for the read count, and the
// compare-and-swap. It is passed its slow path as a parameter, which the
// inliner charges as cheap (see Lock.unlock), so that it and Lock are
// inlined.
func (l *RWLock) lock(slow func(*RWLock)) {
	p := (*uint64)(unsafe.Pointer(&l.word))
	// step: write-fast
	if v := atomic.LoadUint64(p); uint32(v) != 0 || !atomic.CompareAndSwapUint64(p, v, v|uint64(rwLocked)) {
		slow(l)
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
// path, a compare-and-swap of a count word holding nothing but the writer,
// is small enough to be inlined; the batch-th release, and one with
// readers or a halted queue head waiting, take the outlined path.
func (l *RWLock) Unlock() { l.unlock((*RWLock).unlockSlow) }

// unlock is the fast path of Unlock: the count of the release in the
// lock, a load, for the read count, and the compare-and-swap. It is
// passed its outlined rest as a parameter, as lock is.
func (l *RWLock) unlock(slow func(*RWLock)) {
	l.writes++
	p := (*uint64)(unsafe.Pointer(&l.word))
	// step: write-unlock-fast
	if v := atomic.LoadUint64(p); l.writes%batch == 0 || uint32(v) != rwLocked || !atomic.CompareAndSwapUint64(p, v, v-uint64(rwLocked)) {
		slow(l)
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
