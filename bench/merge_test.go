package bench

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestMergeRows pools two measurements of one cell, of 2 runs and 1 run,
// into the row of their 3 runs, and refuses rows it cannot pool.
func TestMergeRows(t *testing.T) {
	spec := Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 2,
		Runs: 2, Duration: runLength(40 * time.Millisecond), Warmup: -1, Seed: 3}
	a := mustMeasure(t, spec)
	spec.Runs = 1
	b := mustMeasure(t, spec)
	m, err := MergeRows([]Row{a, b})
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	if m.Runs != 3 || m.Lock != "pv-ticket" || m.VCPUs != a.VCPUs {
		t.Errorf("merged row %+v", m)
	}
	near("ops/s, the mean of the 3 runs", m.OpsPerSec, (2*a.OpsPerSec+b.OpsPerSec)/3)
	near("max/min, averaged over runs", m.Fairness, (2*a.Fairness+b.Fairness)/3)
	near("Jain, averaged over runs", m.Jain, (2*a.Jain+b.Jain)/3)
	// Events per operation are pooled by operations, not averaged by row.
	ua, ub := a.tally.units, b.tally.units
	near("halts/1k", m.Halts, (a.Halts*ua+b.Halts*ub)/(ua+ub))
	near("kicks/1k", m.Kicks, (a.Kicks*ua+b.Kicks*ub)/(ua+ub))
	if m.LatMax != max(a.LatMax, b.LatMax) || m.LatP99 > m.LatMax || m.LatP50 > m.LatP99 {
		t.Errorf("latency p50 %d p99 %d max %d from maxima %d and %d", m.LatP50, m.LatP99, m.LatMax, a.LatMax, b.LatMax)
	}
	// The pooled standard deviation is that of the three rates, which the
	// rows alone do not give: check it against the tallies' rates.
	rates := append(append([]float64(nil), a.tally.rates...), b.tally.rates...)
	_, sd := meanStdev(rates)
	near("stdev", m.Stdev, sd)
	if a.Runs != 2 || len(a.tally.rates) != 2 {
		t.Errorf("merging changed its input: %d runs", a.Runs)
	}

	other := b
	other.Lock = "sync.Mutex"
	var back Row
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][]Row{"none": nil, "two locks": {a, other}, "read back": {a, back}} {
		if _, err := MergeRows(rows); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
}
