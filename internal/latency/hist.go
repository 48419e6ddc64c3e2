// Package latency is the log-linear latency histogram of the lab and of
// pvtest: exact below 8 ns, then 8 buckets per power of two, so that a
// reported percentile is within 12.5% of the true value. Recording never
// allocates.
//
//	var h latency.Hist
//	h.Record(uint64(time.Since(start)))
//	p99 := h.Quantile(0.99)
package latency

import (
	"math"
	"math/bits"
)

// Hist is a histogram of durations in nanoseconds; the zero Hist is empty.
// It is not safe for concurrent use: each recorder keeps its own and the
// reader Merges them.
type Hist struct {
	counts [histLen]uint64
	n      uint64
	max    uint64
}

const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	histLen     = (64 - histSubBits + 1) * histSub
)

// histIndex returns the bucket of ns.
func histIndex(ns uint64) int {
	if ns < histSub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // ns is in [2^e, 2^(e+1)), e >= histSubBits
	sub := (ns >> (e - histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + int(sub)
}

// histUpper returns the largest value that falls into bucket i.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := uint64(i % histSub)
	lower := (histSub + sub) << (e - histSubBits)
	return lower + (1 << (e - histSubBits)) - 1 // the top bucket ends at MaxUint64
}

// Record adds one sample of ns nanoseconds.
func (h *Hist) Record(ns uint64) {
	h.counts[histIndex(ns)]++
	h.n++
	h.max = max(h.max, ns)
}

// Merge adds the samples of o.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count returns the number of samples.
func (h *Hist) Count() uint64 { return h.n }

// Max returns the largest sample, 0 without samples.
func (h *Hist) Max() uint64 { return h.max }

// Quantile returns the q-quantile (0 < q <= 1) by the nearest rank, as the
// upper edge of its bucket capped by the largest sample; 0 without samples.
func (h *Hist) Quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	want := max(uint64(math.Ceil(q*float64(h.n))), 1)
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= want {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}
