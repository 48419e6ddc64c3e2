package bench

import (
	"bytes"
	"context"
	"strings"
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
			Mode: mode, Overcommit: 2, Runs: 1, Duration: 300 * time.Millisecond, Warmup: -1,
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

func TestMeasureShootdownErrors(t *testing.T) {
	for _, s := range []ShootdownSpec{
		{Mode: pvlock.ShootdownMode(7), Overcommit: 1},
		{Lock: "nope", Overcommit: 1},
		{Overcommit: -1},
	} {
		if _, err := MeasureShootdown(context.Background(), s); err == nil {
			t.Errorf("MeasureShootdown(%+v) succeeded", s)
		}
	}
}

func TestShootdownTables(t *testing.T) {
	rows := []ShootdownRow{
		{Mode: "native", Overcommit: 1, VCPUs: 2, RecordsPerSec: 10000, Stdev: 100},
		{Mode: "pv", Overcommit: 1, VCPUs: 2, RecordsPerSec: 9900, Stdev: 50},
		{Mode: "native", Overcommit: 2, VCPUs: 4, RecordsPerSec: 1000, Stdev: 10, Acked: 4, Kicked: 1.5},
		{Mode: "pv", Overcommit: 2, VCPUs: 4, RecordsPerSec: 3000, Stdev: 20, Acked: 2.5, Deferred: 1.5},
	}
	var b bytes.Buffer
	if err := WriteShootdownTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"%improvement", "native", "pv", "-1.0", "+200.0", "2x"} {
		if !strings.Contains(out, want) {
			t.Errorf("seed table lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Errorf("seed table has %d lines, want header + 2:\n%s", strings.Count(out, "\n"), out)
	}
	b.Reset()
	if err := WriteShootdownDetail(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1.50") || strings.Count(b.String(), "\n") != 5 {
		t.Errorf("detail table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteShootdownJSON(&b, rows); err != nil || !strings.Contains(b.String(), `"records_per_sec": 3000`) {
		t.Errorf("JSON: %v\n%s", err, b.String())
	}
}
