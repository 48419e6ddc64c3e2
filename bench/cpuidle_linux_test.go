package bench

import (
	"testing"
	"time"
)

// TestMeasureIdle: vCPUs that spin on their work at 1x keep their CPUs
// busy, and the row says so; /proc/stat lists every CPU of the machine.
func TestMeasureIdle(t *testing.T) {
	if c := readCPUTimes([]int{0}); c.total == 0 {
		t.Fatalf("/proc/stat reports no time for CPU 0: %+v", c)
	}
	row := mustMeasure(t, Spec{
		Workload: "lockloop", Lock: "sync.Mutex", Overcommit: 1,
		Runs: 2, Duration: 200 * time.Millisecond, Warmup: -1,
	})
	if row.IdlePct < 0 || row.IdlePct > 50 {
		t.Fatalf("lockloop at 1x: CPUs %.1f%% idle, want busy (0-50%%)", row.IdlePct)
	}
	// Overcommitted, with a restricted PV lock whose waiters halt: the
	// share is still measured on every run, and is a share.
	row = mustMeasure(t, Spec{
		Workload: "lockloop", Lock: "pv-ticket", Overcommit: 4,
		Runs: 2, Duration: 200 * time.Millisecond, Warmup: -1,
	})
	if row.IdlePct < 0 || row.IdlePct > 100 {
		t.Fatalf("lockloop at 4x: CPUs %.1f%% idle, want a share (0-100%%)", row.IdlePct)
	}
}
