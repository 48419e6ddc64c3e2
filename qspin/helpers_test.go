package qspin

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/pvlock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// variant is one way to build a Lock under test.
type variant struct {
	name string
	mode Mode
	opts []Option
}

// stressThreshold is short so that PV waiters really halt in stress tests.
const stressThreshold = 128

func variants() []variant {
	return []variant{
		{"pv", ModePV, []Option{SpinThreshold(stressThreshold)}},
		{"pv-nosteal", ModePVNoSteal, []Option{NoStealing(), SpinThreshold(stressThreshold)}},
		{"native", ModeNative, []Option{Native()}},
		{"tas", ModeTAS, []Option{TAS()}},
	}
}

// dump returns the function that describes the lock word and every busy
// node, for a hung test's watchdog.
func dump(l *Lock) func() string { return func() string { return dumpState(l) } }

// dumpState describes the lock word and every busy node.
func dumpState(l *Lock) string {
	v := l.word.Load()
	s := fmt.Sprintf("lock word %#x: locked %d pending %d tail %d\n", v, v&lockedMask, v&pendingVal>>8, v>>tailOffset)
	for id := uint32(0); id < maxNodes; id += chunkNodes {
		c := nodes[id/chunkNodes].Load()
		if c == nil {
			continue
		}
		for i := range c {
			n := &c[i]
			if n.id < vcpuNodes && n.busy.Load() == 0 {
				continue
			}
			next := int64(-1)
			if nx := n.next.Load(); nx != nil {
				next = int64(nx.id)
			}
			s += fmt.Sprintf("node %d: locked %d state %d next %d\n", n.id, n.locked.Load(), n.state.Load(), next)
		}
	}
	return s
}

// longHaltTimeout raises the halt watchdog for a stress run and returns
// the function that restores it. The default second can pass without any
// lost wake-up when the host is loaded by other processes or while the Go
// runtime stops the world for a collection (hundreds of milliseconds with
// 256 vCPU threads under -race). A lost wake-up still shows: the waiter
// sleeps until this timeout, and the run counts a halt timeout.
func longHaltTimeout() (restore func()) {
	return locktest.SetPolicy(func(p *pvlock.Policy) { p.HaltTimeout = 10 * time.Second })
}

// stressResult is what a stress run observed.
type stressResult struct {
	total int64
	per   []int64
	delta pvlock.Snapshot
}

// stressVCPUs runs vcpus pinned vCPUs on the host CPUs, all hammering l
// for d, and checks mutual exclusion, that every acquisition was counted
// and that the lock was left free.
func stressVCPUs(t *testing.T, l *Lock, vcpus int, d time.Duration) stressResult {
	t.Helper()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: vcpus, Pinning: pvlock.PinEach})
	defer longHaltTimeout()()
	st := Stats(l.Mode())
	before := st.Snapshot()
	var o testkit.Oracle
	per := make([]int64, vcpus)
	// The run lasts d from the moment the vCPUs start: starting 256
	// pinned threads can take longer than d on a loaded host.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var startOnce sync.Once
	wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("%v x%d vCPUs", l.Mode(), vcpus), dump(l))
	err := vm.Run(ctx, func(_ context.Context, v *pvlock.VCPU) error {
		startOnce.Do(func() { time.AfterFunc(d, cancel) })
		n := int64(0)
		for i := 0; i == 0 || ctx.Err() == nil; i++ {
			l.Lock()
			o.CriticalSection(i)
			l.Unlock()
			n++
		}
		per[v.Index()] = n
		return nil
	})
	wd.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return checkRun(t, l, &o, per, st.Snapshot().Sub(before))
}

// stressVCPUsGated runs vcpus pinned vCPUs that each take l rounds*iters
// times, but lets only active of them contend at once: a vCPU waits for
// one of active turns, takes the lock iters times and passes the turn on
// (FIFO, so every vCPU gets its turns). This bounds the number of spinning
// waiters for the variants that never halt: hundreds of threads spinning
// on 2 CPUs make every FIFO hand-off wait for a time slice, and they also
// starve the Go runtime's own threads (garbage collection has to stop
// every one of them) until a run takes minutes. The vCPUs float over the
// host CPUs, so that Linux spreads the few contending ones.
func stressVCPUsGated(t *testing.T, l *Lock, vcpus, active, rounds, iters int) stressResult {
	t.Helper()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: vcpus, Pinning: pvlock.PinFloat})
	st := Stats(l.Mode())
	before := st.Snapshot()
	var o testkit.Oracle
	per := make([]int64, vcpus)
	defer longHaltTimeout()()
	turns := make(chan struct{}, active)
	wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("%v x%d vCPUs, %d at once", l.Mode(), vcpus, active), dump(l))
	err := vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		for r := 0; r < rounds; r++ {
			turns <- struct{}{}
			for i := 0; i < iters; i++ {
				l.Lock()
				o.CriticalSection(i)
				l.Unlock()
				per[v.Index()]++
			}
			<-turns
		}
		return nil
	})
	wd.Stop()
	if err != nil {
		t.Fatal(err)
	}
	r := checkRun(t, l, &o, per, st.Snapshot().Sub(before))
	for i, n := range per {
		if n != int64(rounds*iters) {
			t.Errorf("vCPU %d took the lock %d times, want %d", i, n, rounds*iters)
		}
	}
	return r
}

// stressGoroutines is stressVCPUs for plain goroutines (pooled nodes,
// Park waiters), each doing iters acquisitions.
func stressGoroutines(t *testing.T, l *Lock, goroutines, iters int) stressResult {
	t.Helper()
	st := Stats(l.Mode())
	before := st.Snapshot()
	var o testkit.Oracle
	defer longHaltTimeout()()
	per := make([]int64, goroutines)
	wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("%v x%d goroutines", l.Mode(), goroutines), dump(l))
	testkit.Goroutines(goroutines, func(g int) {
		for i := 0; i < iters; i++ {
			l.Lock()
			o.CriticalSection(i)
			l.Unlock()
			per[g]++
		}
	})
	wd.Stop()
	return checkRun(t, l, &o, per, st.Snapshot().Sub(before))
}

func checkRun(t *testing.T, l *Lock, o *testkit.Oracle, per []int64, delta pvlock.Snapshot) stressResult {
	t.Helper()
	var total int64
	for _, n := range per {
		total += n
	}
	if v := o.Violations(); v != 0 {
		t.Errorf("%v: mutual exclusion violated %d times", l.Mode(), v)
	}
	if o.Counter != total {
		t.Errorf("%v: counter %d after %d acquisitions: an update was lost", l.Mode(), o.Counter, total)
	}
	if total == 0 {
		t.Errorf("%v: no acquisition at all", l.Mode())
	}
	// The lock adds its releases to the counter batch at a time: count
	// the batch boundaries the run crossed.
	end := l.releases
	start := end - uint32(total)
	if got, want := delta.Get(Acquisitions), uint64(end/batch-start/batch)*batch; got != want {
		t.Errorf("%v: %s = %d after releases %d..%d, want %d", l.Mode(), Acquisitions, got, start, end, want)
	}
	if n := delta.Get(HaltTimeouts); n != 0 {
		t.Errorf("%v: %d halt timeouts", l.Mode(), n)
	}
	if n := delta.Get(LostWakeups); n != 0 {
		t.Errorf("%v: %d lost wake-ups", l.Mode(), n)
	}
	if l.word.Load() != 0 {
		t.Errorf("%v: lock word %#x after the run, want 0", l.Mode(), l.word.Load())
	}
	checkQuiescent(t)
	return stressResult{total: total, per: per, delta: delta}
}

// checkQuiescent verifies that no hash entry and no node outlived the
// waits: every per-vCPU node is free and every pooled node is back on the
// free stack.
func checkQuiescent(t *testing.T) {
	t.Helper()
	if pvHash.t != nil {
		if n := table().used(); n != 0 {
			t.Errorf("%d hash entries left after all locks were released", n)
		}
	}
	for id := uint32(0); id < vcpuNodes; id += chunkNodes {
		c := nodes[id/chunkNodes].Load()
		if c == nil {
			continue
		}
		for i := range c {
			if c[i].busy.Load() != 0 {
				t.Errorf("per-vCPU node %d still busy", c[i].id)
			}
		}
	}
	if free, used := freeNodes(), int(pool.used.Load())-nodesHeldByTest; free != used {
		t.Errorf("%d pooled nodes handed out but %d free: a node leaked", used, free)
	}
}

// nodesHeldByTest is the number of pooled nodes a test took on purpose.
var nodesHeldByTest int

// freeNodes counts the pooled free stack; only on a quiescent pool.
func freeNodes() int {
	n := 0
	for top := uint32(pool.head.Load()); top != 0; top = nodeAt(top - 1).freeNext.Load() {
		n++
	}
	return n
}

func logResult(t *testing.T, r stressResult) {
	t.Helper()
	lo, hi := r.per[0], r.per[0]
	for _, n := range r.per {
		lo, hi = min(lo, n), max(hi, n)
	}
	d := r.delta
	t.Logf("acq %d (per waiter min %d max %d) slowpath %d pending %d steal %d halts %d wait_node %d early %d head %d again %d kicks %d wake %v spurious %d no_node %d",
		r.total, lo, hi, d.Get(LockSlowpath), d.Get(LockPending), d.Get(PVLockStealing),
		d.Get(Halts), d.Get(PVWaitNode), d.Get(PVWaitEarly), d.Get(PVWaitHead), d.Get(PVWaitAgain),
		d.Get(PVKickUnlock), WakeLatency(d), d.Get(PVSpuriousWakeup), d.Get(LockNoNode))
}
