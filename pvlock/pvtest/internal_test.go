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
