package bench

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// A Probe is the lock a workload is handed by Measure: the lock under
// test, with two cheap measurements around it.
//
//   - Acquisitions are counted per vCPU, for the fairness measures (max/min
//     and Jain's index of the per-vCPU counts).
//   - One acquisition in SampleEvery is timed from the call of Lock to its
//     return, and the wait goes into a log-linear latency histogram.
//
// Workloads lock a Probe with Acquire(lock, v), which charges the
// acquisition to vCPU v: the count and the histogram are then the vCPU's
// own (a padded slot only it writes), so the hot path shares no extra cache
// line. A plain Lock call still works: it is counted and sampled too, but
// into the Probe's own fields, written while the lock is held.
type Probe struct {
	inner sync.Locker
	m     *meter

	// Written only while inner is held: acquisitions made with plain Lock.
	plain     uint64
	plainHist latencyHist
}

// SampleEvery is the sampling period of acquisition latency: one Lock in
// SampleEvery is timed.
const SampleEvery = 16

// Lock acquires the lock without saying for which vCPU (see Acquire).
func (p *Probe) Lock() {
	if rand.Uint32()%SampleEvery == 0 {
		p.timedLock(&p.plainHist)
	} else {
		p.inner.Lock()
	}
	p.plain++
}

// timedLock acquires the inner lock and records the wait in h (which the
// lock guards, or only the calling vCPU writes).
func (p *Probe) timedLock(h *latencyHist) {
	start := monoNow()
	p.inner.Lock()
	h.record(uint64(monoNow() - start))
}

// Unlock releases the lock.
func (p *Probe) Unlock() { p.inner.Unlock() }

// LockOn acquires the lock for vCPU v and charges the acquisition to it.
// v must be the calling vCPU.
func (p *Probe) LockOn(v *pvlock.VCPU) {
	s := &p.m.slots[v.Index()]
	if s.tick++; s.tick%SampleEvery != 0 {
		p.inner.Lock()
	} else {
		p.timedLock(&s.hist)
	}
	s.acq++
}

// Inner returns the lock under test.
func (p *Probe) Inner() sync.Locker { return p.inner }

// Acquire locks l on behalf of vCPU v, the caller: through a Probe the
// acquisition is counted for v, any other lock is simply locked. Workloads
// use it instead of l.Lock() wherever they know their vCPU.
func Acquire(l sync.Locker, v *pvlock.VCPU) {
	if p, ok := l.(*Probe); ok {
		p.LockOn(v)
		return
	}
	l.Lock()
}

var epoch = time.Now()

// monoNow reads the monotonic clock (one vDSO call).
func monoNow() time.Duration { return time.Since(epoch) }

// meter holds the per-vCPU measurements of one VM's run, shared by every
// Probe made for that run.
type meter struct {
	slots []meterSlot

	mu     sync.Mutex // guards probes
	probes []*Probe
}

type meterSlot struct {
	tick uint32
	acq  uint64
	hist latencyHist
	_    [128]byte // keeps neighbouring vCPUs' hot words apart
}

func newMeter(nvcpu int) *meter {
	m := &meter{slots: make([]meterSlot, nvcpu)}
	for i := range m.slots {
		// A random phase gives every acquisition the same chance of being
		// timed, also on a vCPU that acquires fewer than SampleEvery times
		// (often the one that waited longest).
		m.slots[i].tick = rand.Uint32N(SampleEvery)
	}
	return m
}

// wrap returns a Probe around lock that reports into m.
func (m *meter) wrap(lock sync.Locker) *Probe {
	p := &Probe{inner: lock, m: m}
	m.mu.Lock()
	m.probes = append(m.probes, p)
	m.mu.Unlock()
	return p
}

// acquisitions returns the acquisitions charged to each vCPU and the number
// made with plain Lock, which no vCPU was charged for. Call it after the
// run.
func (m *meter) acquisitions() (perVCPU []uint64, plain uint64) {
	perVCPU = make([]uint64, len(m.slots))
	for i := range m.slots {
		perVCPU[i] = m.slots[i].acq
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.probes {
		plain += p.plain
	}
	return perVCPU, plain
}

// mergeInto adds every latency sample of the run to h.
func (m *meter) mergeInto(h *latencyHist) {
	for i := range m.slots {
		h.merge(&m.slots[i].hist)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.probes {
		h.merge(&p.plainHist)
	}
}

// latencyHist is a log-linear histogram of nanoseconds: exact below 8ns,
// then 8 buckets per power of two, so a reported percentile is within
// 12.5% of the true value. It never allocates.
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
	return lower + (1 << (e - histSubBits)) - 1 // the top bucket ends at MaxUint64
}

func (h *latencyHist) record(ns uint64) {
	h.counts[histIndex(ns)]++
	h.n++
	if ns > h.max {
		h.max = ns
	}
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q <= 1) as the upper edge of its
// bucket, capped by the largest sample; 0 when there are no samples.
func (h *latencyHist) quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	want := uint64(rank(q, int(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// Jain returns Jain's fairness index of xs, (Σx)²/(n·Σx²): 1 when all
// are equal, 1/n when one gets everything. It is 1 for an empty or all-zero
// slice (nobody was treated worse than anybody else).
func Jain(xs []uint64) float64 {
	var sum, sq float64
	for _, x := range xs {
		f := float64(x)
		sum += f
		sq += f * f
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// MaxMin returns max/min of xs, the fairness the PV ticketlock thread's
// tools print. A zero count is taken as one, so a vCPU that starved shows
// up as a large ratio rather than an infinity.
func MaxMin(xs []uint64) float64 {
	if len(xs) == 0 {
		return 1
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return float64(hi) / float64(max(lo, 1))
}
