package bench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// TestRWLoopEveryLock runs rwloop through Measure on every lock it
// compares by default, at 1x and 2x: the table's invariant holds (Measure
// fails the run otherwise) and every lock makes progress.
func TestRWLoopEveryLock(t *testing.T) {
	for _, lock := range RWLoopLocks {
		for _, oc := range []float64{1, 2} {
			spec := Spec{Workload: "rwloop", Lock: lock, Overcommit: oc, Runs: 1,
				Duration: runLength(150 * time.Millisecond), Warmup: -1, Seed: 42,
				Params: Params{WriteEvery: 10}}
			row := mustMeasure(t, spec)
			for row.OpsPerSec == 0 && spec.Duration < 2*time.Second { // a loaded host starved a vCPU thread
				spec.Duration *= 2
				row = mustMeasure(t, spec)
			}
			if row.OpsPerSec <= 0 || row.Unit != "ops" || row.Fairness < 1 {
				t.Errorf("%s at %gx: implausible row %+v", lock, oc, row)
			}
		}
	}
}

// TestMeasureRWLoop checks the per-role measures: both roles make
// progress at the configured ratio, and the latency quantiles are
// ordered, for a reader-writer lock and for an exclusive one.
func TestMeasureRWLoop(t *testing.T) {
	for _, lock := range []string{"pv-rwlock", "sync.Mutex"} {
		row, err := MeasureRWLoop(context.Background(), RWLoopSpec{Spec: Spec{Lock: lock, Overcommit: 2, Runs: 2,
			Duration: runLength(200 * time.Millisecond), Warmup: -1, Seed: 7, Params: Params{WriteEvery: 10}}})
		if err != nil {
			t.Fatalf("%s: %v", lock, err)
		}
		t.Logf("%s: %+v", lock, row)
		r, w := row.Readers, row.Writers
		if r.Ops == 0 || w.Ops == 0 || row.WriteEvery != 10 || row.Runs != 2 || row.VCPUs != 2*row.PCPUs {
			t.Fatalf("%s: implausible row %+v", lock, row)
		}
		// Each vCPU writes once in ten operations from a random phase:
		// one write more or fewer per vCPU and run.
		ops, slack := r.Ops+w.Ops, uint64(row.VCPUs*row.Runs)
		if w.Ops*10 > ops+10*slack || w.Ops*10+10*slack < ops {
			t.Errorf("%s: %d writes in %d operations, want one in ten", lock, w.Ops, ops)
		}
		for name, x := range map[string]RoleRow{"readers": r, "writers": w} {
			if x.PerSec <= 0 || x.Fairness < 1 || x.LatMax == 0 || x.LatP50 > x.LatP99 || x.LatP99 > x.LatMax {
				t.Errorf("%s %s: implausible %+v", lock, name, x)
			}
		}
		if row.OpsPerSec < r.PerSec || row.OpsPerSec < w.PerSec {
			t.Errorf("%s: %v ops/s in all, fewer than one role's", lock, row.OpsPerSec)
		}
	}
	if _, err := MeasureRWLoop(context.Background(), RWLoopSpec{Spec: Spec{Lock: "nope", Overcommit: 1}}); err == nil {
		t.Error("MeasureRWLoop of an unknown lock did not fail")
	}
}

// TestRWLoopDetectsTornReads tears the table as a writer inside would
// have left it: a read reports it, the run fails with a clear error, and
// Check refuses the table.
func TestRWLoopDetectsTornReads(t *testing.T) {
	l := newRWLoop(new(sync.RWMutex), 1, Params{WriteEvery: 1 << 30})
	if err := l.read(&l.vcpus[0]); err != nil {
		t.Fatalf("a read of the intact table: %v", err)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("Check of the intact table: %v", err)
	}
	l.table.gen[0]++ // a writer is inside: gen[1] not bumped yet

	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runFor(context.Background(), []*pvlock.VM{vm}, time.Second, func(v *pvlock.VCPU) func() {
		return func() { l.Op(v) }
	})
	var pe *pvlock.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "rwloop: vCPU 0: a reader saw the table torn") {
		t.Fatalf("run over a torn table: %v, want the torn read reported", err)
	}
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "torn reads") {
		t.Fatalf("Check after a torn read: %v", err)
	}

	l = newRWLoop(new(sync.RWMutex), 1, Params{})
	l.table.slot[3] = 5 // an update half done
	l.table.gen = [2]uint64{}
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "sum to 5") {
		t.Fatalf("Check of a table whose slots do not sum to zero: %v", err)
	}
}
