package bench

import (
	"context"
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// TestMeasureShootdown runs both modes overcommitted. Every record checks
// the vCPU's view, so a successful measurement also means no vCPU searched
// with a stale view after a shootdown returned.
func TestMeasureShootdown(t *testing.T) {
	for _, mode := range []pvlock.ShootdownMode{pvlock.ShootdownNative, pvlock.ShootdownPV} {
		row, err := MeasureShootdown(context.Background(), ShootdownSpec{
			Spec: Spec{Overcommit: 2, Runs: 1, Duration: 300 * time.Millisecond, Warmup: -1}, Mode: mode,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", row)
		if row.RecordsPerSec <= 0 || row.CallsPerSec <= 0 || row.CallMicros <= 0 || row.Mode != mode.String() {
			t.Fatalf("%s: implausible row %+v", mode, row)
		}
		if sum := row.Acked + row.Deferred + row.Offline; sum < float64(row.VCPUs)-0.01 || sum > float64(row.VCPUs)+0.01 {
			t.Fatalf("%s: acked+deferred+offline = %.2f per call, want every one of %d vCPUs", mode, sum, row.VCPUs)
		}
		if mode == pvlock.ShootdownNative && row.Deferred != 0 || mode == pvlock.ShootdownPV && row.Kicked != 0 {
			t.Fatalf("%s: kicked %.2f deferred %.2f", mode, row.Kicked, row.Deferred)
		}
	}
}
