package qspin

import (
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/pvlock"
)

// overtakeHead sets up the interleaving the head of a lock with stealing
// is built for: a queue head that halted on a held lock is kicked at the
// release, and the releaser takes the lock again before the head runs.
// It returns with the lock held by the caller, the kicked head still
// waiting, and done closed once the head has had its turn. The releaser
// keeps its P (no directed yield), so its Lock steals at once; should the
// head win anyway, the setup is tried again.
func overtakeHead(t *testing.T, l *Lock) (done chan struct{}) {
	t.Helper()
	defer locktest.SetPolicy(func(p *pvlock.Policy) { p.DirectedYield = false })()
	for try := 0; try < 100; try++ {
		l.Lock()
		done = make(chan struct{})
		go func() {
			l.Lock()
			l.Unlock()
			close(done)
		}()
		testkit.WaitFor(t, "the head to halt and mark the lock SLOW", func() bool {
			return l.word.Load()&lockedMask == slowVal
		})
		l.Unlock() // unhash, release, mark, kick
		l.Lock()   // steals: the kicked head is not running yet
		select {
		case <-done:
			l.Unlock() // the head was first: try again
		default:
			return done
		}
	}
	t.Fatal("the head took the lock before the releaser in 100 tries")
	return nil
}

// A kicked head of a lock with stealing that finds the lock stolen, and is
// not yet starving, hashes itself anew and halts again: the lock turns
// SLOW again while the stealer holds it, with one entry in the table. The
// kernel's head (and this one before the change) would spin with pending
// set instead and never halt again.
func TestOvertakenHeadHaltsAgain(t *testing.T) {
	defer func(d int64) { starveAfter = d }(starveAfter)
	starveAfter = int64(time.Hour)
	l := New(SpinThreshold(16), NoRestriction()) // the queue head, not the gate
	before := Stats(ModePV).Snapshot()
	done := overtakeHead(t, l)
	testkit.WaitFor(t, "the overtaken head to halt again", func() bool {
		return l.word.Load()&lockedMask == slowVal
	})
	if l.word.Load()&pendingVal != 0 {
		t.Errorf("word %#x: a head that is not starving set pending", l.word.Load())
	}
	if n := table().used(); n != 1 {
		t.Errorf("%d hash entries while one head is halted, want 1", n)
	}
	l.Unlock()
	<-done
	d := Stats(ModePV).Snapshot().Sub(before)
	if d.Get(PVHeadStarving) != 0 || d.Get(LostWakeups) != 0 || d.Get(HaltTimeouts) != 0 {
		t.Errorf("pv_head_starving %d, lost wake-ups %d, halt timeouts %d; want 0",
			d.Get(PVHeadStarving), d.Get(LostWakeups), d.Get(HaltTimeouts))
	}
	testkit.WaitFor(t, "the lock to be free", func() bool { return l.word.Load() == 0 })
	checkQuiescent(t)
}

// A starving head closes the lock to stealers: kicked and overtaken, it
// sets pending and spins until the lock is its own, without halting again,
// and pv_head_starving counts it.
func TestStarvingHeadSetsPending(t *testing.T) {
	defer func(d int64) { starveAfter = d }(starveAfter)
	starveAfter = 0
	l := New(SpinThreshold(16), NoRestriction()) // the queue head, not the gate
	before := Stats(ModePV).Snapshot()
	done := overtakeHead(t, l)
	testkit.WaitFor(t, "the starving head to set pending", func() bool {
		return l.word.Load()&pendingVal != 0
	})
	if l.stealOnce() {
		t.Fatal("a locker stole the lock from a starving head")
	}
	if w := l.word.Load(); w&lockedMask == slowVal {
		t.Errorf("word %#x: the starving head halted again", w)
	}
	l.Unlock()
	<-done
	d := Stats(ModePV).Snapshot().Sub(before)
	if d.Get(PVHeadStarving) == 0 {
		t.Error("pv_head_starving did not count the starving head")
	}
	testkit.WaitFor(t, "the lock to be free", func() bool { return l.word.Load() == 0 })
	checkQuiescent(t)
}

// A waiter's starvation counts from the start of its wait, not from when it
// heads the queue: a waiter that has waited outside the gate (or
// contending) for starveAfter is a starving head as soon as it heads the
// queue, while the lock is still held.
func TestLongWaiterQueuesStarving(t *testing.T) {
	defer func(d int64) { starveAfter = d }(starveAfter)
	starveAfter = int64(time.Hour)
	l := New(SpinThreshold(16))
	before := Stats(ModePV).Snapshot()
	starving := func() uint64 { return Stats(ModePV).Snapshot().Sub(before).Get(PVHeadStarving) }
	l.Lock()
	done := make(chan struct{})
	go func() {
		l.queue(now() - starveAfter) // began to wait starveAfter ago
		l.Unlock()
		close(done)
	}()
	testkit.WaitFor(t, "the head to be starving", func() bool { return starving() != 0 })
	l.Unlock()
	<-done
	testkit.WaitFor(t, "the lock to be free", func() bool { return l.word.Load() == 0 })
	checkQuiescent(t)
}
