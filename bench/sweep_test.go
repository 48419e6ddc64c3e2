package bench

import (
	"context"
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// TestSweepConfirms runs a small sweep with two rounds of confirmation: the
// sweep's own rows come first, one per setting, then the rounds, each the
// adaptive default and the best fixed setting of the sweep's rows, the
// first of the two alternating. The halt-poll policy is restored.
func TestSweepConfirms(t *testing.T) {
	before := pvlock.CurrentPolicy()
	spec := SweepSpec{Workloads: []string{"lockloop"}, Locks: []string{"pv-ticket"}, Factors: []float64{1},
		Thresholds: []int{64}, HaltPolls: []time.Duration{0}, Confirm: 2,
		Cell: Spec{Runs: 1, Duration: runLength(30 * time.Millisecond), Warmup: -1, Seed: 7}}
	var progress []string
	spec.Progress = func(done, total int, label string) {
		if total != 8 || done != len(progress) {
			t.Errorf("progress %d of %d after %d calls", done, total, len(progress))
		}
		progress = append(progress, label)
	}
	rows, err := Sweep(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || len(progress) != 8 {
		t.Fatalf("%d rows and %d progress calls, want 4 settings + 2 rounds of 2", len(rows), len(progress))
	}
	best := rows[1]
	for _, r := range rows[:4] {
		if r.Confirm != 0 {
			t.Errorf("sweep row %s has confirmation round %d", r.Setting(), r.Confirm)
		}
		if r.Setting() != "adaptive" && r.OpsPerSec > best.OpsPerSec {
			best = r
		}
	}
	want := []struct {
		setting string
		round   int
	}{{"adaptive", 1}, {best.Setting(), 1}, {best.Setting(), 2}, {"adaptive", 2}}
	for i, w := range want {
		r := rows[4+i]
		if r.Setting() != w.setting || r.Confirm != w.round || r.OpsPerSec <= 0 {
			t.Errorf("confirmation row %d: %s round %d at %.0f ops/s, want %s round %d",
				i, r.Setting(), r.Confirm, r.OpsPerSec, w.setting, w.round)
		}
	}
	if after := pvlock.CurrentPolicy(); after.HaltPoll != before.HaltPoll || after.HaltPollAdaptive != before.HaltPollAdaptive {
		t.Errorf("halt-poll policy %v/%v after the sweep, want %v/%v",
			after.HaltPoll, after.HaltPollAdaptive, before.HaltPoll, before.HaltPollAdaptive)
	}
	bad := spec
	bad.Confirm = -1
	if _, err := Sweep(context.Background(), bad); err == nil {
		t.Error("a sweep with -1 rounds of confirmation ran")
	}
}
