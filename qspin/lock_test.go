package qspin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/pvlock"
)

// variant is one way to build a Lock or an RWLock under test.
type variant struct {
	name string
	mode Mode
	opts []Option
}

// stressThreshold is short so that PV waiters really halt in stress tests.
const stressThreshold = 128

// variants are the Lock and RWLock variants under test. The PV ones spin
// for stressThreshold, so that their waiters (an RWLock's queue heads)
// really halt.
func variants() []variant {
	return []variant{
		{"pv", ModePV, []Option{SpinThreshold(stressThreshold)}},
		{"pv-nosteal", ModePVNoSteal, []Option{NoStealing(), SpinThreshold(stressThreshold)}},
		{"native", ModeNative, []Option{Native()}},
		{"tas", ModeTAS, []Option{TAS()}},
	}
}

func TestZeroValueIsUnlockedPV(t *testing.T) {
	var l Lock
	if l.Mode() != ModePV || !l.PV() {
		t.Fatalf("zero Lock: mode %v, PV() %v; want pv, true", l.Mode(), l.PV())
	}
	if l.IsLocked() || l.IsContended() {
		t.Fatal("zero Lock reports locked or contended")
	}
	l.Lock()
	if !l.IsLocked() || l.IsContended() {
		t.Fatalf("held, uncontended lock: IsLocked %v IsContended %v", l.IsLocked(), l.IsContended())
	}
	l.Unlock()
	if l.IsLocked() {
		t.Fatal("IsLocked after Unlock")
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		l    *Lock
		mode Mode
		pv   bool
	}{
		{New(), ModePV, true},
		{New(Native()), ModeNative, false},
		{New(TAS()), ModeTAS, false},
		{NewTAS(), ModeTAS, false},
		{New(NoStealing()), ModePVNoSteal, true},
		{New(Native(), NoStealing()), ModePVNoSteal, true}, // last one wins
		{New(NoStealing(), TAS()), ModeTAS, false},
	}
	for i, c := range cases {
		if c.l.Mode() != c.mode || c.l.PV() != c.pv {
			t.Errorf("case %d: mode %v PV %v, want %v %v", i, c.l.Mode(), c.l.PV(), c.mode, c.pv)
		}
	}
	if got := New().spin.Threshold(); got != pvlock.DefaultSpinThreshold {
		t.Errorf("default threshold %d, want %d", got, pvlock.DefaultSpinThreshold)
	}
	if got := New(SpinThreshold(77)).spin.Threshold(); got != 77 {
		t.Errorf("SpinThreshold(77) gave %d", got)
	}
	if got := New(SpinThreshold(77), SpinThreshold(0)).spin.Threshold(); got != pvlock.DefaultSpinThreshold {
		t.Errorf("SpinThreshold(0) did not restore the default: %d", got)
	}
	short := New(SpinDuration(time.Microsecond)).spin.Threshold()
	long := New(SpinDuration(time.Millisecond)).spin.Threshold()
	if short < 1 || long <= short {
		t.Errorf("SpinDuration: 1µs -> %d polls, 1ms -> %d polls", short, long)
	}
	names := map[string]bool{}
	for m := ModePV; m <= ModeTAS; m++ {
		names[m.String()] = true
		kind, mode := "qspin", m.String()
		if m == ModeTAS {
			kind, mode = "tas", "native"
		}
		if Stats(m).Kind() != kind || Stats(m).Mode() != mode {
			t.Errorf("Stats(%v) is %s/%s", m, Stats(m).Kind(), Stats(m).Mode())
		}
	}
	if len(names) != 4 || !strings.HasPrefix(Mode(9).String(), "Mode(") {
		t.Errorf("mode names %v, Mode(9) = %q", names, Mode(9).String())
	}
	testkit.MustPanic(t, "Stats of unknown mode", func() { Stats(Mode(9)) })
}

// TestUnlockOfUnlockedPanics checks the misuse panic (where sync.Mutex
// throws a fatal error), and that the failed Unlock left the lock word
// intact and usable.
func TestUnlockOfUnlockedPanics(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			l := New(v.opts...)
			testkit.MustPanic(t, "unlock of unlocked lock", l.Unlock)
			l.Lock()
			l.Unlock()
			testkit.MustPanic(t, "unlock of unlocked lock", l.Unlock)
			if w := l.word.Load(); w != 0 {
				t.Fatalf("word %#x after a refused Unlock", w)
			}
			if !l.TryLock() {
				t.Fatal("lock unusable after a refused Unlock")
			}
			l.Unlock()
		})
	}
}

// TestTryLock checks that TryLock takes a free lock, fails on a held one
// (from another goroutine, without blocking), fails while waiters queue,
// and counts its acquisitions.
func TestTryLock(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			l := New(v.opts...)
			// Acquisitions are counted at release, batch at a time: the
			// first batch-1 add nothing, the batch-th adds them all.
			before := Stats(v.mode).Snapshot()
			for i := 1; i <= batch; i++ {
				if !l.TryLock() {
					t.Fatal("TryLock of a free lock failed")
				}
				l.Unlock()
				want := uint64(0)
				if i == batch {
					want = batch
				}
				if i >= batch-1 {
					if got := Stats(v.mode).Snapshot().Sub(before).Get(Acquisitions); got != want {
						t.Errorf("after %d TryLocks %d acquisitions counted, want %d", i, got, want)
					}
				}
			}
			if !l.TryLock() {
				t.Fatal("TryLock of a free lock failed")
			}
			if l.TryLock() {
				t.Fatal("TryLock succeeded on a lock held by the caller")
			}
			res := make(chan int, 1)
			go func() {
				n := 0
				for i := 0; i < 1000; i++ {
					if l.TryLock() {
						n++
					}
				}
				res <- n
			}()
			if n := testkit.Receive(t, res, 30*time.Second, "TryLock blocked"); n != 0 {
				t.Fatalf("TryLock succeeded %d times on a held lock", n)
			}

			// A waiter queues (or spins) behind the held lock.
			done := make(chan struct{})
			go func() {
				l.Lock()
				l.Unlock()
				close(done)
			}()
			if v.mode != ModeTAS {
				testkit.WaitFor(t, "a waiter to show in IsContended", l.IsContended)
			}
			if l.TryLock() {
				t.Fatal("TryLock succeeded on a held, contended lock")
			}
			l.Unlock()
			<-done
			if l.IsLocked() || l.IsContended() {
				t.Fatalf("lock left locked %v / contended %v", l.IsLocked(), l.IsContended())
			}
			if !l.TryLock() {
				t.Fatal("TryLock of a free lock failed after contention")
			}
			l.Unlock()
		})
	}
}

// TestTryLockUnderContention mixes TryLock and Lock on vCPUs with the
// exclusion oracle: a successful TryLock must be exclusive too. (A queue
// lock may be contended all the time, so TryLock may never win here.)
func TestTryLockUnderContention(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			l := New(v.opts...)
			vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2 * len(cpus)})
			var o testkit.Oracle
			var mu sync.Mutex
			tries, wins := 0, 0
			err := locktest.RunFor(vm, 200*time.Millisecond, func(ctx context.Context, vc *pvlock.VCPU) error {
				myTries, myWins := 0, 0
				for i := 0; i == 0 || ctx.Err() == nil; i++ {
					if vc.Index()%2 == 0 {
						myTries++
						if !l.TryLock() {
							continue
						}
						myWins++
					} else {
						l.Lock()
					}
					o.CriticalSection(i)
					l.Unlock()
				}
				mu.Lock()
				tries += myTries
				wins += myWins
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := o.Violations(); n != 0 {
				t.Fatalf("mutual exclusion violated %d times", n)
			}
			if tries == 0 {
				t.Error("no TryLock attempt")
			}
			t.Logf("TryLock won %d of %d, %d critical sections", wins, tries, o.Counter)
		})
	}
}

// TestNesting holds several locks of every variant at once, in a fixed
// order, from vCPUs and goroutines: a waiter uses a node only while it
// waits, so nesting needs no extra nodes.
func TestNesting(t *testing.T) {
	var locks []*Lock
	for _, v := range variants() {
		locks = append(locks, New(v.opts...), New(v.opts...))
	}
	var counters [8]int // guarded by all the locks together
	body := func(i int) {
		for _, l := range locks {
			l.Lock()
		}
		for k := range counters {
			counters[k]++
		}
		if i%2 == 0 {
			for k := len(locks) - 1; k >= 0; k-- {
				locks[k].Unlock()
			}
		} else {
			for _, l := range locks {
				l.Unlock() // release in acquisition order
			}
		}
	}
	cpus := locktest.HostCPUs(t)
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2 * len(cpus)})
	const perWaiter = 300
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWaiter; i++ {
				body(i)
			}
		}()
	}
	err := vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		for i := 0; i < perWaiter; i++ {
			body(i)
		}
		return nil
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	want := (2 + 2*len(cpus)) * perWaiter
	for k, c := range counters {
		if c != want {
			t.Errorf("counter %d = %d, want %d", k, c, want)
		}
	}
	for _, l := range locks {
		if l.IsLocked() || l.IsContended() {
			t.Errorf("%v lock left locked or contended", l.Mode())
		}
	}
	checkQuiescent(t)
}

// TestUnlockByAnotherGoroutine hands a held lock to another goroutine to
// release, as sync.Mutex allows, including a SLOW PV lock whose halted
// waiter must be kicked by that goroutine.
func TestUnlockByAnotherGoroutine(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			l := New(append(v.opts, SpinThreshold(16), NoRestriction())...) // a queued waiter halts
			before := Stats(v.mode).Snapshot()
			l.Lock()
			got := make(chan struct{})
			go func() {
				l.Lock()
				close(got)
				l.Unlock()
			}()
			if v.mode != ModeTAS {
				testkit.WaitFor(t, "the waiter to queue", l.IsContended)
			}
			if l.PV() {
				testkit.WaitFor(t, "the waiter to halt and mark the lock SLOW", func() bool {
					return l.word.Load()&lockedMask == slowVal
				})
			}
			released := make(chan struct{})
			go func() {
				l.Unlock()
				close(released)
			}()
			<-released
			testkit.Receive(t, got, 30*time.Second, "waiter never got the lock")
			testkit.WaitFor(t, "the lock to be free", func() bool { return l.word.Load() == 0 })
			d := Stats(v.mode).Snapshot().Sub(before)
			if l.PV() && (d.Get(PVWaitHead) == 0 || d.Get(PVKickUnlock) != 1) {
				t.Errorf("pv_wait_head %d, pv_kick_unlock %d; want > 0 and 1",
					d.Get(PVWaitHead), d.Get(PVKickUnlock))
			}
			checkQuiescent(t)
		})
	}
}

// TestPVSpinOff checks that turning pvlock.Policy.PVSpin off stops PV locks from
// halting while they still exclude.
func TestPVSpinOff(t *testing.T) {
	defer locktest.NoPVSpin()()
	cpus := locktest.HostCPUs(t)
	for _, opt := range []Option{SpinThreshold(stressThreshold), NoStealing()} {
		l := New(opt, SpinThreshold(stressThreshold))
		r := stressVCPUs(t, l, 2*len(cpus), 200*time.Millisecond)
		if n := r.delta.Get(Halts); n != 0 {
			t.Errorf("%v halted %d times with PV spinning off", l.Mode(), n)
		}
	}
}

// TestWaitEarlyBehindHaltedPredecessor checks pv_wait_early: a queued
// waiter whose predecessor is halted halts at once instead of spinning out
// its threshold (far longer here than the test's patience), then returns
// once the predecessor's hand-off sets its locked flag and kicks it.
func TestWaitEarlyBehindHaltedPredecessor(t *testing.T) {
	l := New(SpinThreshold(1 << 31))
	before := Stats(ModePV).Snapshot()
	prev, _ := getNode()
	n, w := getNode()
	if prev == nil || n == nil {
		t.Fatal("no pooled nodes")
	}
	defer putNode(prev)
	defer putNode(n)
	for _, q := range []*qnode{prev, n} { // as the slow path readies a node
		q.locked.Store(0)
		q.next.Store(nil)
		q.state.Store(stateRunning)
	}
	prev.state.Store(stateHalted)
	done := make(chan struct{})
	go func() {
		l.pvWaitNode(n, prev, w)
		close(done)
	}()
	testkit.WaitFor(t, "the waiter to halt behind its halted predecessor", func() bool {
		return n.state.Load() == stateHalted
	})
	// The hand-off: the new queue head's locked flag, then the kick.
	n.locked.Store(1)
	w.Kick()
	testkit.Receive(t, done, 10*time.Second, "the kicked waiter did not return")
	d := Stats(ModePV).Snapshot().Sub(before)
	if d.Get(PVWaitEarly) != 1 || d.Get(PVWaitNode) != 1 || d.Get(HaltTimeouts) != 0 {
		t.Fatalf("wait_early %d, wait_node %d, halt timeouts %d; want 1, 1, 0",
			d.Get(PVWaitEarly), d.Get(PVWaitNode), d.Get(HaltTimeouts))
	}
}
