package pvtest

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestNextSharesN: PBs claiming in batches hand out exactly the shared
// iterations between them, then report false for good; a cancelled run
// stops them at their next claim.
func TestNextSharesN(t *testing.T) {
	var left atomic.Int64
	left.Store(10)
	ctx := context.Background()
	a := &PB{ctx: ctx, left: &left, grain: 3}
	b := &PB{ctx: ctx, left: &left, grain: 3}
	got := 0
	for a.Next() {
		got++
		if b.Next() {
			got++
		}
	}
	for b.Next() {
		got++
	}
	if got != 10 || !a.done || !b.done || a.Next() || b.Next() {
		t.Fatalf("handed out %d of 10 iterations (done %v %v)", got, a.done, b.done)
	}

	left.Store(1000)
	cctx, cancel := context.WithCancel(ctx)
	c := &PB{ctx: cctx, left: &left, grain: 4}
	for range 4 {
		if !c.Next() {
			t.Fatal("Next reported false with iterations left")
		}
	}
	cancel()
	if c.Next() || left.Load() != 996 {
		t.Fatalf("Next went on after the cancellation (%d left)", left.Load())
	}
}

// TestLatencyQuantile: the nearest-rank p99 of the histogram is within a
// bucket (12.5%) of the true value and never above the largest sample.
func TestLatencyQuantile(t *testing.T) {
	var h latencyHist
	if h.quantile(0.99) != 0 {
		t.Fatal("an empty histogram has a p99")
	}
	for i := uint64(1); i <= 1000; i++ {
		h.record(i * 100) // 100 ns ... 100 µs
	}
	var m latencyHist
	m.merge(&h)
	p99 := m.quantile(0.99) // true value: 99000
	if p99 < 99000 || p99 > 99000*9/8 || m.quantile(1) != 100000 || m.n != 1000 {
		t.Fatalf("p99 %d, max %d, n %d; want p99 in [99000, 111375], max 100000, n 1000", p99, m.quantile(1), m.n)
	}
	for _, ns := range []uint64{0, 1, 7, 8, 9, 1 << 40, 1<<64 - 1} {
		if i := histIndex(ns); i >= histLen || histUpper(i) < ns || (i > 0 && histUpper(i-1) >= ns) {
			t.Errorf("%d ns falls into bucket %d, which ends at %d", ns, i, histUpper(i))
		}
	}
}
