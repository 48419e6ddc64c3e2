package torture

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// Deliberately broken locks, after locktorture's lock_busted: each has
// exactly one bug, and the torture must report it.

// leakyLock is a test-and-set spinlock that, once in leakEvery failed
// attempts, lets the caller in beside the holder.
type leakyLock struct {
	holders atomic.Int32
	fails   atomic.Uint64
}

const leakEvery = 1000

func (l *leakyLock) Lock() {
	for {
		if l.holders.CompareAndSwap(0, 1) {
			return
		}
		if l.fails.Add(1)%leakEvery == 0 {
			l.holders.Add(1) // the bug: a second holder
			return
		}
		relax.Pause(1)
	}
}

func (l *leakyLock) Unlock() { l.holders.Add(-1) }

// droppyLock is a PV-style ticket lock: a waiter spins briefly, then
// publishes itself, re-checks and halts; the unlocker kicks the holder of
// the next ticket. Once in dropEvery unlocks it forgets the kick, so a
// halted waiter whose turn came sleeps until the halt watchdog. It keeps
// the same timeout and lost wake-up counts as the real PV locks.
type droppyLock struct {
	next, serving   atomic.Uint32
	unlocks         atomic.Uint64
	timeouts, lost  atomic.Uint64
	_               [0]func() // not comparable, not copyable by accident
	waiters         *kick.Table
	dropEvery       uint64
	spinBeforeHalts int
}

var droppyWaiters kick.Table

func newDroppyLock() *droppyLock {
	return &droppyLock{waiters: &droppyWaiters, dropEvery: 50, spinBeforeHalts: 64}
}

func (l *droppyLock) key() uintptr { return uintptr(unsafe.Pointer(l)) }

func (l *droppyLock) Lock() {
	t := l.next.Add(1) - 1
	for i := 0; i < l.spinBeforeHalts; i++ {
		if l.serving.Load() == t {
			return
		}
		relax.Pause(1)
	}
	w := kick.Get()
	defer kick.Put(w)
	for l.serving.Load() != t {
		w.Arm()
		l.waiters.Publish(w, l.key(), uint64(t))
		if l.serving.Load() == t { // re-check after publishing
			l.waiters.Withdraw(w)
			return
		}
		res := w.Halt(pvlock.CurrentPolicy().HaltTimeout)
		l.waiters.Withdraw(w)
		if res == kick.TimedOut {
			l.timeouts.Add(1)
			if l.serving.Load() == t {
				l.lost.Add(1)
			}
		}
	}
}

func (l *droppyLock) Unlock() {
	next := l.serving.Add(1)
	if l.unlocks.Add(1)%l.dropEvery == 0 {
		return // the bug: the kick is lost
	}
	l.waiters.Kick(l.key(), uint64(next))
}

func (l *droppyLock) stats() (uint64, uint64) { return l.timeouts.Load(), l.lost.Load() }

// starvingLock is a ticket lock that keeps its first caller waiting for
// delay, once, before letting it take a ticket: that vCPU starves while
// the others pass the lock around. (The inner lock is FIFO so that no
// other vCPU can starve by chance.)
type starvingLock struct {
	mu      ticket.Lock
	victim  atomic.Pointer[kick.Waiter]
	delayed atomic.Bool
	delay   time.Duration
}

func (l *starvingLock) Lock() {
	if me := kick.Current(); me != nil {
		l.victim.CompareAndSwap(nil, me)
		if l.victim.Load() == me && l.delayed.CompareAndSwap(false, true) {
			time.Sleep(l.delay) // the bug: this caller is kept out
		}
	}
	l.mu.Lock()
}

func (l *starvingLock) Unlock() { l.mu.Unlock() }

// stuckLock keeps its first caller in Lock until release is closed: a
// hang, as a lost wake-up without a watchdog would cause.
type stuckLock struct {
	mu      ticket.Lock
	victim  atomic.Pointer[kick.Waiter]
	release chan struct{}
}

func (l *stuckLock) Lock() {
	if me := kick.Current(); me != nil && (l.victim.CompareAndSwap(nil, me) || l.victim.Load() == me) {
		<-l.release
	}
	l.mu.Lock()
}

func (l *stuckLock) Unlock() { l.mu.Unlock() }

// panickyLock panics on its n-th Lock.
type panickyLock struct {
	mu    ticket.Lock
	calls atomic.Int64
	n     int64
}

func (l *panickyLock) Lock() {
	if l.calls.Add(1) == l.n {
		panic("panickyLock: deliberate")
	}
	l.mu.Lock()
}

func (l *panickyLock) Unlock() { l.mu.Unlock() }
