package ticket

import (
	"runtime"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
)

// While the oldest passive waiter watches the lock, releases do not look
// at the gate, so a release clears the slowpath flag that was the passive
// waiters' mark. When the watch ends in a halt, the watcher must set the
// flag again: else the holder's next release takes the fast path, admits
// nobody, and the waiter sleeps until the halt watchdog.
func TestWatchEndsWithTheFlagSetAgain(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU())) // goroutines may watch
	defer kick.SetHaltPoll(kick.HaltPoll())
	kick.SetHaltPoll(50*time.Millisecond, false) // the watch's window
	defer func(d int64) { lockcore.FairBound = d }(lockcore.FairBound)
	lockcore.FairBound = int64(time.Hour)

	l := New()
	st := Stats(ModePV)
	before := st.Snapshot()
	delta := func(ev string) uint64 { return st.Snapshot().Sub(before).Get(ev) }
	l.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// lockContended's path, with the waiter sent outside by hand: it
		// enters the active set (it is empty), then waits outside.
		l.gate.Enter((*gated)(l), l.stats(), &gateEvents, true)
		l.gate.Demote((*gated)(l), l.stats(), &gateEvents)
		l.lockQueued()
		l.gate.Leave()
		l.Unlock()
	}()
	testkit.WaitFor(t, "the passive waiter to watch", func() bool { return delta(PassiveWatches) == 1 })
	if l.word.Load()&flagBit == 0 {
		t.Fatal("a passive waiter left the lock unmarked")
	}
	// A release while it watches clears the flag; the holder takes the
	// lock again on its fast path.
	l.Unlock()
	l.Lock()
	if l.word.Load()&flagBit != 0 {
		t.Fatal("a release while the oldest passive waiter watched kept the flag")
	}
	testkit.WaitFor(t, "the watch to end in a halt", func() bool { return delta(PassiveHalts) == 1 })
	if l.word.Load()&flagBit == 0 {
		t.Fatal("the watch ended without setting the flag again")
	}
	l.Unlock() // the slow unlock: it admits the waiter, with a kick
	testkit.Receive(t, done, 30*time.Second, "the halted waiter was never admitted")
	if k, to := delta(PassiveKicks), delta(HaltTimeouts); k != 1 || to != 0 {
		t.Errorf("passive kicks %d, halt timeouts %d: want the release's kick, 1 and 0", k, to)
	}
}
