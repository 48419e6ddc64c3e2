package pvtest

import (
	"math"
	"math/bits"
)

// latencyHist is a log-linear histogram of nanoseconds: exact below 8 ns,
// then 8 buckets per power of two, so that a reported percentile is within
// 12.5% of the true value. Recording never allocates.
type latencyHist struct {
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
	return lower + (1 << (e - histSubBits)) - 1
}

func (h *latencyHist) record(ns uint64) {
	h.counts[histIndex(ns)]++
	h.n++
	h.max = max(h.max, ns)
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q <= 1) by the nearest rank, as the
// upper edge of its bucket capped by the largest sample; 0 without samples.
func (h *latencyHist) quantile(q float64) uint64 {
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
