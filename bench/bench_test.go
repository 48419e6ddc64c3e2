package bench

import (
	"context"
	"math"
	"testing"
	"time"

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
