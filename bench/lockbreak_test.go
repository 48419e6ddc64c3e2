package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

func TestMeasureLockBreak(t *testing.T) {
	for _, brk := range []bool{false, true} {
		row, err := MeasureLockBreak(context.Background(), LockBreakSpec{
			Spec: Spec{Overcommit: 1, Runs: 2, Duration: 150 * time.Millisecond, Warmup: -1}, Break: brk,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", row)
		if row.ShortOps == 0 || row.BatchesPerSec <= 0 || row.ShortPerSec <= 0 || row.Lock != "pv-ticket" || row.Break != brk {
			t.Fatalf("break=%v: implausible row %+v", brk, row)
		}
		if !(row.P50 > 0 && row.P50 <= row.P99 && row.P99 <= row.Max) {
			t.Fatalf("break=%v: latencies not ordered: p50 %v p99 %v max %v", brk, row.P50, row.P99, row.Max)
		}
		// Off: never breaks. On: the short vCPU waits behind every batch,
		// so batches must break.
		if brk != (row.Breaks > 0) {
			t.Fatalf("break=%v but %.1f breaks per batch", brk, row.Breaks)
		}
	}
}

func TestLatencyMicros(t *testing.T) {
	ns := make([]int64, 0, 1000)
	for i := 1000; i >= 1; i-- {
		ns = append(ns, int64(i)*1000) // 1..1000 µs, unsorted
	}
	p50, p99, maxv := latencyMicros(ns)
	if p50 != 500 || p99 != 990 || maxv != 1000 {
		t.Fatalf("p50 %v p99 %v max %v, want 500 990 1000", p50, p99, maxv)
	}
	if a, b, c := latencyMicros(nil); a != 0 || b != 0 || c != 0 {
		t.Fatal("empty input")
	}
}

func TestLockBreakRegistered(t *testing.T) {
	row := mustMeasure(t, Spec{Workload: "lockbreak", Lock: "pv-ticket", Overcommit: 1,
		Runs: 1, Duration: 100 * time.Millisecond, Warmup: -1})
	if row.OpsPerSec <= 0 {
		t.Fatalf("row %+v", row)
	}
}

// wrapped is a lock wrapper like a measuring probe: it forwards to the lock
// it wraps and exposes it with Inner.
type wrapped struct{ inner sync.Locker }

func (w *wrapped) Lock()              { w.inner.Lock() }
func (w *wrapped) Unlock()            { w.inner.Unlock() }
func (w *wrapped) Inner() sync.Locker { return w.inner }

func TestContenderSeesThroughWrappers(t *testing.T) {
	tk := ticket.New()
	if contender(tk) == nil || contender(&wrapped{tk}) != pvlock.Contender(tk) {
		t.Fatal("ticket lock, bare or wrapped, not found to be a Contender")
	}
	if contender(new(sync.Mutex)) != nil || contender(&wrapped{new(sync.Mutex)}) != nil {
		t.Fatal("sync.Mutex taken for a Contender")
	}
}
