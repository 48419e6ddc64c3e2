package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBuckets: every bucket ends where the next begins, and MaxUint64 is
// in the last.
func TestBuckets(t *testing.T) {
	for i := 0; i < histLen-1; i++ {
		u := histUpper(i)
		if histIndex(u) != i || histIndex(u+1) != i+1 {
			t.Fatalf("bucket %d ends at %d: index %d, next %d", i, u, histIndex(u), histIndex(u+1))
		}
	}
	if histIndex(math.MaxUint64) != histLen-1 {
		t.Fatalf("MaxUint64 in bucket %d of %d", histIndex(math.MaxUint64), histLen)
	}
}

// TestQuantile: quantiles of a log-normal sample are within a bucket
// (12.5%) above the exact ones, never below, and q=1 is the maximum; a
// merged histogram answers as the original.
func TestQuantile(t *testing.T) {
	var h Hist
	if h.Quantile(0.5) != 0 || h.Max() != 0 {
		t.Fatal("an empty histogram has a median")
	}
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]uint64, 20000)
	for i := range xs {
		xs[i] = uint64(math.Exp(r.NormFloat64()*2 + 8)) // log-normal around 3µs
		h.Record(xs[i])
	}
	var m Hist
	m.Merge(&h)
	slices.Sort(xs)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := float64(xs[int(math.Ceil(q*float64(len(xs))))-1])
		got := float64(m.Quantile(q))
		if got < exact || got > exact*1.126 {
			t.Errorf("q%.2f = %v, exact %v", q, got, exact)
		}
	}
	if m.Quantile(1) != xs[len(xs)-1] || m.Max() != xs[len(xs)-1] || m.Count() != uint64(len(xs)) {
		t.Errorf("max %d, q1 %d, n %d; want %d and %d", m.Max(), m.Quantile(1), m.Count(), xs[len(xs)-1], len(xs))
	}
}
