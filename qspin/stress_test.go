package qspin

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
)

// overcommits are the vCPU counts of the stress tests: 1x, 2x and 4x the
// host CPUs, and 256 vCPUs (at least 64x on the 2-CPU CI machines).
func overcommits(t *testing.T) []int {
	cpus := locktest.HostCPUs(t)
	return []int{len(cpus), 2 * len(cpus), 4 * len(cpus), max(256, 4*len(cpus))}
}

// TestStressVCPUs checks every variant on pinned vCPUs at 1x, 2x and 4x,
// and the PV variants with 256 vCPUs, all hammering one lock: mutual
// exclusion, every acquisition counted, no halt timeout and no lost
// wake-up, no leaked hash entry or node, and that PV waiters really halted
// and were kicked.
func TestStressVCPUs(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 200 * time.Millisecond
	}
	cpus := locktest.HostCPUs(t)
	for _, v := range variants() {
		for _, n := range overcommits(t) {
			if n > 4*len(cpus) && !(v.mode == ModePV || v.mode == ModePVNoSteal) {
				// Hundreds of spinning vCPUs: see TestStressManyVCPUs.
				continue
			}
			t.Run(fmt.Sprintf("%s/%dvcpus", v.name, n), func(t *testing.T) {
				l := New(v.opts...)
				r := stressVCPUs(t, l, n, d)
				logResult(t, r)
				checkPVActivity(t, l, r, n > len(cpus))
			})
		}
	}
}

// TestStressManyVCPUs runs every variant on 256 vCPUs (at least 64 per
// CPU on 2 CPUs), each vCPU taking the lock in turns of a few
// acquisitions with 2 vCPUs per CPU contending at once. TestStressVCPUs
// also runs the PV variants with all 256 vCPUs contending at once.
func TestStressManyVCPUs(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	n := overcommits(t)[3]
	rounds, iters := 3, 16
	if testing.Short() {
		rounds, iters = 1, 8
	}
	for _, v := range variants() {
		active := 2 * len(cpus)
		if v.mode == ModeNative {
			// Native waiters never yield their CPU, so with more of
			// them than CPUs the helper threads that pass turns
			// between parked vCPUs wait for time slices (18 s for
			// this test at 2x): keep them at 1x.
			active = len(cpus)
		}
		t.Run(fmt.Sprintf("%s/%dvcpus", v.name, n), func(t *testing.T) {
			l := New(v.opts...)
			r := stressVCPUsGated(t, l, n, active, rounds, iters)
			logResult(t, r)
			checkPVActivity(t, l, r, false)
		})
	}
}

// checkPVActivity asserts that non-PV variants never halted, that a lock
// without stealing never stole and, with wantHalts, that a PV run
// exercised the PV slow path: with more vCPUs hammering the lock than CPUs
// and a short spin threshold, waiters must halt and be kicked by unlocks.
func checkPVActivity(t *testing.T, l *Lock, r stressResult, wantHalts bool) {
	t.Helper()
	d := r.delta
	switch {
	case !l.PV():
		if n := d.Get(Halts); n != 0 {
			t.Errorf("%v lock halted %d times", l.Mode(), n)
		}
	case wantHalts:
		if d.Get(Halts) == 0 || d.Get(PVKickUnlock) == 0 {
			t.Errorf("%v: halts %d, kicks at unlock %d; want both > 0",
				l.Mode(), d.Get(Halts), d.Get(PVKickUnlock))
		}
	}
	if l.Mode() == ModePVNoSteal && d.Get(PVLockStealing) != 0 {
		t.Errorf("lock without stealing stole %d times", d.Get(PVLockStealing))
	}
}

// TestStressGoroutines runs every variant from plain goroutines, which use
// pooled nodes and park instead of halting their thread.
func TestStressGoroutines(t *testing.T) {
	iters := 3000
	if testing.Short() {
		iters = 1000
	}
	for _, v := range variants() {
		counts := []int{2, 8, 64}
		if v.mode == ModeNative {
			// Native waiters spin in FIFO order, so every hand-off to a
			// goroutine that is not running waits for the Go scheduler
			// to preempt a spinner (10 ms): more goroutines than Ps is
			// the lock-waiter preemption collapse, not a test.
			counts = []int{runtime.GOMAXPROCS(0)}
		}
		iters := iters
		if v.mode == ModeNative {
			iters /= 3 // a GC worker taking a P makes even this slow
		}
		for _, g := range counts {
			t.Run(fmt.Sprintf("%s/%dgoroutines", v.name, g), func(t *testing.T) {
				l := New(v.opts...)
				r := stressGoroutines(t, l, g, iters)
				logResult(t, r)
				if l.PV() && g >= 64 && r.delta.Get(Halts) == 0 {
					t.Errorf("%v with %d goroutines never parked", l.Mode(), g)
				}
			})
		}
	}
}

// TestZeroValueFromGoroutines uses a zero Lock (PV, default threshold)
// from plain goroutines.
func TestZeroValueFromGoroutines(t *testing.T) {
	var l Lock
	if l.Mode() != ModePV {
		t.Fatalf("zero Lock mode %v, want pv", l.Mode())
	}
	r := stressGoroutines(t, &l, 16, 2000)
	logResult(t, r)
}

// TestStressPVThresholds runs the PV variants at 4x with spin thresholds
// from "halt at once" to long, shifting which races of the PV protocol
// (wait-early, kick_node versus a waking node, a head halting while its
// lock is released or stolen) dominate.
func TestStressPVThresholds(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	d := 500 * time.Millisecond
	if testing.Short() {
		d = 100 * time.Millisecond
	}
	for _, th := range []uint32{1, 16, 1024} {
		for _, opts := range [][]Option{nil, {NoStealing()}} {
			l := New(append(opts, SpinThreshold(th))...)
			t.Run(fmt.Sprintf("%v/threshold%d", l.Mode(), th), func(t *testing.T) {
				r := stressVCPUs(t, l, 4*len(cpus), d)
				logResult(t, r)
				checkPVActivity(t, l, r, true)
			})
		}
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

// stressResult is what a stress run observed.
type stressResult struct {
	total int64
	per   []int64
	delta lockstat.Snapshot
}

// stressVCPUs runs vcpus pinned vCPUs on the host CPUs, all hammering l
// for d, and checks mutual exclusion, that every acquisition was counted
// and that the lock was left free.
func stressVCPUs(t *testing.T, l *Lock, vcpus int, d time.Duration) stressResult {
	t.Helper()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: vcpus, Pinning: pvlock.PinEach})
	defer locktest.LongHaltTimeout()()
	st := Stats(l.Mode())
	before := st.Snapshot()
	var o testkit.Oracle
	per := make([]int64, vcpus)
	wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("%v x%d vCPUs", l.Mode(), vcpus), dump(l))
	// The run lasts d from the moment the vCPUs start: starting 256
	// pinned threads can take longer than d on a loaded host.
	err := locktest.RunFor(vm, d, func(ctx context.Context, v *pvlock.VCPU) error {
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
	defer locktest.LongHaltTimeout()()
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
	defer locktest.LongHaltTimeout()()
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

func checkRun(t *testing.T, l *Lock, o *testkit.Oracle, per []int64, delta lockstat.Snapshot) stressResult {
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
