package bench

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pvlock/pvlock/internal/latency"
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
	plainHist latency.Hist
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
func (p *Probe) timedLock(h *latency.Hist) {
	start := monoNow()
	p.inner.Lock()
	h.Record(uint64(monoNow() - start))
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
	hist latency.Hist
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
func (m *meter) mergeInto(h *latency.Hist) {
	for i := range m.slots {
		h.Merge(&m.slots[i].hist)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.probes {
		h.Merge(&p.plainHist)
	}
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
