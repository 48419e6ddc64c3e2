package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/latency"
	"github.com/pvlock/pvlock/pvlock"
	"go.uber.org/goleak"
)

func TestMeasureLockloop(t *testing.T) {
	for _, lock := range []string{"native-ticket", "pv-ticket", "sync.Mutex"} {
		row := mustMeasure(t, Spec{
			Workload: "lockloop", Lock: lock, Overcommit: 1,
			Runs: 2, Duration: 100 * time.Millisecond, Warmup: -1,
		})
		if row.OpsPerSec <= 0 || row.Runs != 2 || row.VCPUs != row.PCPUs || row.Lock != lock {
			t.Fatalf("%s: implausible row %+v", lock, row)
		}
		if row.Fairness < 1 || math.IsNaN(row.Stdev) {
			t.Fatalf("%s: fairness %v stdev %v", lock, row.Fairness, row.Stdev)
		}
	}
}

func TestMeasureCountsHalts(t *testing.T) {
	// 4x with the PV ticket lock: waiters are preempted for real, so some
	// must halt and every halt that ends by kick must be counted as one.
	row := mustMeasure(t, Spec{
		Workload: "lockloop", Lock: "pv-ticket", Overcommit: 4,
		Runs: 1, Duration: 300 * time.Millisecond, Warmup: -1,
	})
	if row.Halts <= 0 || row.Kicks <= 0 || row.StealPct <= 0 {
		t.Fatalf("no halts/kicks/steal at 4x: %+v", row)
	}
}

// mustMeasure runs Measure and fails the test on an error.
func mustMeasure(t *testing.T, spec Spec) Row {
	t.Helper()
	row, err := Measure(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s on %s at %gx: %v", spec.Workload, spec.Lock, spec.Overcommit, err)
	}
	return row
}

// rejects checks that measure fails on every one of specs.
func rejects[S, R any](t *testing.T, measure func(context.Context, S) (R, error), specs ...S) {
	t.Helper()
	for _, s := range specs {
		if _, err := measure(context.Background(), s); err == nil {
			t.Errorf("%T %+v accepted", s, s)
		}
	}
}

func TestMeasureErrors(t *testing.T) {
	rejects(t, Measure,
		Spec{Workload: "nope", Lock: "pv-ticket", Overcommit: 1},
		Spec{Workload: "lockloop", Lock: "nope", Overcommit: 1},
		Spec{Workload: "lockloop", Lock: "pv-ticket-short", Overcommit: 1}, // the torture's
		Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 0},
		Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1, CPUs: []int{1 << 20}})
	rejects(t, MeasureLockBreak,
		LockBreakSpec{Spec: Spec{Lock: "sync.Mutex", Overcommit: 1}, Break: true},
		LockBreakSpec{Spec: Spec{Lock: "nope", Overcommit: 1}},
		LockBreakSpec{Spec: Spec{Overcommit: 0}},
		LockBreakSpec{Spec: Spec{Overcommit: 1, CPUs: []int{1 << 20}}})
	rejects(t, MeasureShootdown,
		ShootdownSpec{Spec: Spec{Overcommit: 1}, Mode: pvlock.ShootdownMode(7)},
		ShootdownSpec{Spec: Spec{Lock: "nope", Overcommit: 1}},
		ShootdownSpec{Spec: Spec{Overcommit: -1}})
}

func TestWorkUnitsProportional(t *testing.T) {
	a, b := WorkUnits(time.Microsecond), WorkUnits(100*time.Microsecond)
	if a <= 0 || b < 50*a {
		t.Fatalf("WorkUnits(1µs)=%d, WorkUnits(100µs)=%d", a, b)
	}
}

// TestWorkUnitsMeanTime checks the calibration against the work the
// workloads do: WorkUnits(d) units of busy, with the result used as a
// critical section uses it, take about d (the least disturbed of many
// tries). It fails if the calibration and the workloads spin different
// loops, as when the compiler deletes work whose result is dropped.
func TestWorkUnitsMeanTime(t *testing.T) {
	const d = 100 * time.Microsecond
	n := WorkUnits(d)
	best := time.Hour
	var sink uint64
	for i := 0; i < 50; i++ {
		start := time.Now()
		sink += busy(sink, n)
		best = min(best, time.Since(start))
	}
	if best < d/2 || best > d*9/5 {
		t.Fatalf("WorkUnits(%v) = %d units took %v at best (sink %d)", d, n, best, sink)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// benchFactors are the overcommit factors of the workload benchmarks.
var benchFactors = []float64{1, 2, 4}

// benchWorkload runs one sub-benchmark per registered lock and factor,
// named lock=<name>/oc=<k>x so that benchstat can compare locks or
// factors. Each sub-benchmark starts one VM of pinned vCPU threads,
// overcommitted k times on all allowed CPUs, and the vCPUs take the b.N
// operations from a shared counter in batches. Besides ns/op it reports
// throughput (ops/s; for hackbench also msgs/s), vCPU halts and kicks per
// operation, and the p99 time to acquire the lock.
func benchWorkload(b *testing.B, workload string) {
	wl, err := WorkloadByName(workload)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range locks.Names() {
		lk, _ := locks.Lookup(name)
		for _, oc := range benchFactors {
			b.Run(fmt.Sprintf("lock=%s/oc=%gx", name, oc), func(b *testing.B) {
				benchOne(b, wl, lk, oc)
			})
		}
	}
}

// benchBatch is how many operations a vCPU claims at a time, so that the
// shared counter is not a second contended lock.
const benchBatch = 16

func benchOne(b *testing.B, wl Workload, lk locks.Kind, oc float64) {
	vms, err := newVMs(Spec{Workload: wl.Name, Lock: lk.Name, Overcommit: oc, VMs: 1})
	if err != nil {
		b.Fatal(err)
	}
	vm, nvcpu := vms[0], len(vms[0].VCPUs())
	m := newMeter(nvcpu)
	inst := wl.Setup(m.wrap(lk.New()), nvcpu, Params{Seed: 1, NewLock: func() sync.Locker { return m.wrap(lk.New()) }})
	before := vcpuCounters(vms)
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		for {
			n := left.Add(-benchBatch) + benchBatch // ops left before our claim
			if n <= 0 {
				return nil
			}
			for i := min(n, benchBatch); i > 0; i-- {
				inst.Op(v)
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if c, ok := inst.(Checker); ok {
		if err := c.Check(); err != nil {
			b.Fatal(err)
		}
	}
	after := vcpuCounters(vms)
	var lat latency.Hist
	m.mergeInto(&lat)
	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "ops/s")
	if u, ok := inst.(UnitCounter); ok {
		b.ReportMetric(float64(u.Units())/elapsed.Seconds(), wl.Unit+"/s")
	}
	b.ReportMetric(float64(after.halts-before.halts)/n, "halts/op")
	b.ReportMetric(float64(after.kicks-before.kicks)/n, "kicks/op")
	b.ReportMetric(float64(lat.Quantile(0.99)), "p99-ns")
}

// BenchmarkLockloop: lockloop on every lock at 1x, 2x and 4x.
func BenchmarkLockloop(b *testing.B) { benchWorkload(b, "lockloop") }

// BenchmarkEbizzy: ebizzy records on every lock at 1x, 2x and 4x.
func BenchmarkEbizzy(b *testing.B) { benchWorkload(b, "ebizzy") }

// BenchmarkDbench: the dbench mix on every lock at 1x, 2x and 4x.
func BenchmarkDbench(b *testing.B) { benchWorkload(b, "dbench") }

// BenchmarkHackbench: hackbench groups on every lock at 1x, 2x and 4x. An
// op is one Op call (a send and/or a receive attempt); msgs/s is the
// delivered throughput.
func BenchmarkHackbench(b *testing.B) { benchWorkload(b, "hackbench") }

// BenchmarkUncontendedLocks measures one Lock+Unlock pair on a lock nobody
// else touches, for every registered lock through the sync.Locker
// interface the lab uses, next to the floor: the two bare atomic adds a
// ticket lock's fast paths are made of, and sync.Mutex called directly.
func BenchmarkUncontendedLocks(b *testing.B) {
	b.Run("lock=two-atomic-adds", benchTwoAtomicAdds)
	mutex := direct[0] // sync.Mutex-direct
	b.Run("lock="+mutex.name, func(b *testing.B) {
		b.ReportAllocs()
		mutex.single(b)
	})
	for _, name := range locks.Names() {
		lk, _ := locks.Lookup(name)
		b.Run("lock="+name, func(b *testing.B) {
			l := lk.New()
			b.ReportAllocs()
			loop(b, func() { l.Lock(); l.Unlock() })
		})
	}
}

// TestUncontendedLocksAllocFree pins the allocation-free claim for every
// registered lock.
func TestUncontendedLocksAllocFree(t *testing.T) {
	for _, name := range locks.Names() {
		lk, _ := locks.Lookup(name)
		l := lk.New()
		if n := testing.AllocsPerRun(1000, func() { l.Lock(); l.Unlock() }); n != 0 {
			t.Errorf("%s: %v allocations per Lock+Unlock", name, n)
		}
	}
}

// benchTwoAtomicAdds is the floor of an uncontended Lock+Unlock: the two
// bare atomic adds a ticket lock's fast paths are made of.
func benchTwoAtomicAdds(b *testing.B) {
	var w atomic.Uint64
	b.ReportAllocs()
	loop(b, func() { w.Add(1 << 32); w.Add(1) })
}
