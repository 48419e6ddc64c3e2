package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/latency"
	"github.com/pvlock/pvlock/pvlock"
)

// The rwloop workload: read-mostly data (a cache, a routing table, a
// configuration) behind a reader-writer lock. Each vCPU reads a shared
// table under RLock and, once in WriteEvery operations, changes it under
// Lock; a reader checks the table's invariant every time. A reader that
// is preempted while it holds the lock is the reader-writer lock's
// lock-holder preemption: the writer at the queue head, and every reader
// queued behind it, wait for it.

// DefaultWriteEvery is rwloop's default write ratio: one write in 100
// operations.
const DefaultWriteEvery = 100

// RWLoopLocks are the locks rwloop compares by default: the reader-writer
// locks, and the exclusive locks a Go user could have used instead.
var RWLoopLocks = []string{"sync.RWMutex", "sync.Mutex", "native-rwlock", "pv-rwlock", "pv-qspin"}

// rwTableSlots is the size of rwloop's table.
const rwTableSlots = 16

// rwTable is the shared data of rwloop. A writer bumps gen[0], moves an
// amount from one slot to another and bumps gen[1], so that the slots
// always sum to zero and the generations are equal whenever no writer is
// inside. Its fields are plain on purpose: only the lock orders them, and
// the race detector watches them too.
type rwTable struct {
	gen  [2]uint64
	slot [rwTableSlots]int64
}

// rwLoop is one prepared rwloop run.
type rwLoop struct {
	lock       locks.RWLocker
	cs, nc     int // busy work units inside and outside the critical sections
	writeEvery uint64
	_          [64]byte
	table      rwTable // guarded by lock
	_          [64]byte
	vcpus      []rwLoopVCPU
}

// rwLoopVCPU is one vCPU's counters, written only by that vCPU.
type rwLoopVCPU struct {
	n             uint64 // operations so far; every writeEvery-th is a write
	reads, writes uint64
	tick          uint32 // read latency sampling
	readHist      latency.Hist
	writeHist     latency.Hist // every write's wait
	seed          uint64
	violation     string // the first torn read this vCPU saw
	violations    uint64
	_             [128]byte
}

// newRWLoop prepares a run on lock for nvcpu vCPUs. The lock's read side
// is taken with RLock if it has one (looking through the lab's Probe, so
// that both roles are measured alike), else exclusively (locks.ReadSide).
func newRWLoop(lock sync.Locker, nvcpu int, p Params) *rwLoop {
	if pr, ok := lock.(*Probe); ok {
		lock = pr.Inner()
	}
	if p.CriticalWork <= 0 {
		p.CriticalWork = DefaultCriticalWork
	}
	if p.OutsideWork <= 0 {
		p.OutsideWork = DefaultOutsideWork
	}
	if p.WriteEvery <= 0 {
		p.WriteEvery = DefaultWriteEvery
	}
	l := &rwLoop{lock: locks.ReadSide(lock), cs: WorkUnits(p.CriticalWork), nc: WorkUnits(p.OutsideWork),
		writeEvery: uint64(p.WriteEvery), vcpus: make([]rwLoopVCPU, nvcpu)}
	for i := range l.vcpus {
		s := &l.vcpus[i]
		s.seed = splitmix(p.Seed ^ uint64(i+1))
		// A random phase, so that the vCPUs do not all write at once,
		// and a random sampling phase, as the Probe's.
		s.n = s.seed % l.writeEvery
		s.tick = uint32(s.seed>>32) % SampleEvery
	}
	return l
}

// Op does one read or, once in writeEvery operations, one write, then
// the work outside the lock. A read that finds the table torn fails the
// run: the lock let a reader in beside a writer.
func (l *rwLoop) Op(v *pvlock.VCPU) {
	s := &l.vcpus[v.Index()]
	s.n++
	if s.n%l.writeEvery == 0 {
		l.write(s)
	} else if err := l.read(s); err != nil {
		panic(fmt.Sprintf("rwloop: vCPU %d: %v", v.Index(), err))
	}
	busy(uint64(v.Index()), l.nc)
}

// read reads the table under the read lock and checks its invariant.
func (l *rwLoop) read(s *rwLoopVCPU) error {
	s.tick++
	timed := s.tick%SampleEvery == 0
	var start time.Duration
	if timed {
		start = monoNow()
	}
	l.lock.RLock()
	if timed {
		s.readHist.Record(uint64(monoNow() - start))
	}
	g1 := l.table.gen[1]
	var sum int64
	for _, x := range l.table.slot {
		sum += x
	}
	busy(s.seed, l.cs)
	g0 := l.table.gen[0]
	l.lock.RUnlock()
	s.reads++
	if sum != 0 || g0 != g1 {
		s.violations++
		err := fmt.Errorf("a reader saw the table torn (slots sum to %d, generations %d and %d): a writer was inside", sum, g0, g1)
		if s.violation == "" {
			s.violation = err.Error()
		}
		return err
	}
	return nil
}

// write changes the table under the write lock; every write's wait is
// recorded.
func (l *rwLoop) write(s *rwLoopVCPU) {
	start := monoNow()
	l.lock.Lock()
	s.writeHist.Record(uint64(monoNow() - start))
	t := &l.table
	t.gen[0]++
	a, b := s.n%rwTableSlots, (s.n*7+3)%rwTableSlots
	x := int64(busy(s.seed^s.n, l.cs)&0xffff) + 1
	t.slot[a] += x
	t.slot[b] -= x
	t.gen[1] = t.gen[0]
	l.lock.Unlock()
	s.writes++
}

// Check verifies the table after the run: the slots sum to zero, both
// generations count every write, and no reader saw it torn.
func (l *rwLoop) Check() error {
	writes := sumOf(l.vcpus, func(s *rwLoopVCPU) uint64 { return s.writes })
	for i := range l.vcpus {
		if s := &l.vcpus[i]; s.violations > 0 {
			return fmt.Errorf("rwloop: vCPU %d saw %d torn reads (first: %s)", i, s.violations, s.violation)
		}
	}
	var sum int64
	for _, x := range l.table.slot {
		sum += x
	}
	if g := l.table.gen; sum != 0 || g[0] != writes || g[1] != writes {
		return fmt.Errorf("rwloop: after %d writes the slots sum to %d and the generations read %d and %d: updates were lost",
			writes, sum, g[0], g[1])
	}
	return nil
}

func init() {
	RegisterWorkload(Workload{
		Name: "rwloop",
		Doc: "Read-mostly data behind a reader-writer lock: each vCPU reads a shared table " +
			"under RLock (a lock without a read side is taken exclusively) and, once in " +
			"-write-every operations (default 100), changes it under Lock, with -cs of work " +
			"inside and -outside between operations; every read checks the table's invariant. " +
			"A reader preempted while it holds the lock is the reader-writer lock's lock-holder " +
			"preemption: the writer waiting for it, and every reader queued behind the writer, " +
			"wait too. Fairness counts operations per vCPU; the latency columns stay empty " +
			"(MeasureRWLoop reports each role's).",
		Unit:  "ops",
		Setup: func(lock sync.Locker, nvcpu int, p Params) Instance { return newRWLoop(lock, nvcpu, p) },
	})
}

// RWLoopSpec is one cell of the rwloop comparison by role: a Spec (Lock
// defaults to "pv-rwlock"; its Workload, VMs and NewLock are not used, its
// Params.CriticalWork, OutsideWork and WriteEvery tune the loop).
type RWLoopSpec struct {
	Spec
}

// RoleRow is what one role, reader or writer, measured in an rwloop cell.
type RoleRow struct {
	// Ops is the number of acquisitions of the role over all runs; PerSec
	// their mean aggregate rate.
	Ops    uint64  `json:"ops"`
	PerSec float64 `json:"ops_per_sec"`
	// Fairness is max/min of the role's per-vCPU acquisitions (see
	// MaxMin), averaged over runs.
	Fairness float64 `json:"fairness_max_min"`
	// LatP50, LatP99 and LatMax describe the wait from calling RLock or
	// Lock to holding the lock, in nanoseconds: over one read in
	// SampleEvery, and over every write (so the writers' LatMax is the
	// worst wait of any writer).
	LatP50 uint64 `json:"lat_p50_ns"`
	LatP99 uint64 `json:"lat_p99_ns"`
	LatMax uint64 `json:"lat_max_ns"`
}

// RWLoopRow is the result of an RWLoopSpec: the cell's aggregate
// throughput and each role's measures.
type RWLoopRow struct {
	Lock       string  `json:"lock"`
	Overcommit float64 `json:"overcommit"`
	VCPUs      int     `json:"vcpus"`
	PCPUs      int     `json:"pcpus"`
	Runs       int     `json:"runs"`
	WriteEvery int     `json:"write_every"`
	// OpsPerSec is the mean aggregate rate of reads and writes; Stdev its
	// standard deviation over runs.
	OpsPerSec float64 `json:"ops_per_sec"`
	Stdev     float64 `json:"stdev"`
	Readers   RoleRow `json:"readers"`
	Writers   RoleRow `json:"writers"`
}

// MeasureRWLoop runs an RWLoopSpec and summarises it by role. A torn read
// fails it.
func MeasureRWLoop(ctx context.Context, spec RWLoopSpec) (RWLoopRow, error) {
	if spec.Lock == "" {
		spec.Lock = "pv-rwlock"
	}
	spec.Spec.defaultsFor("rwloop")
	if spec.Params.WriteEvery <= 0 {
		spec.Params.WriteEvery = DefaultWriteEvery
	}
	lk, vms, err := lockAndVMs(spec.Spec)
	if err != nil {
		return RWLoopRow{}, err
	}
	vm := vms[0]
	n := len(vm.VCPUs())
	row := RWLoopRow{Lock: spec.Lock, Overcommit: spec.Overcommit, VCPUs: n, PCPUs: len(vm.CPUs()),
		Runs: spec.Runs, WriteEvery: spec.Params.WriteEvery}
	var (
		rates, readRates, writeRates []float64
		readFair, writeFair          float64
		readLat, writeLat            latency.Hist
	)
	err = spec.eachRun(ctx, func(r int, d time.Duration) error {
		p := spec.Params
		p.Seed = runSeed(spec.Seed, r, 0)
		inst := newRWLoop(lk.New(), n, p)
		elapsed, err := runFor(ctx, vms, d, func(v *pvlock.VCPU) func() { return func() { inst.Op(v) } })
		if err == nil {
			err = inst.Check()
		}
		if err != nil || r < 0 {
			return err
		}
		reads := make([]uint64, n)
		writes := make([]uint64, n)
		for i := range inst.vcpus {
			s := &inst.vcpus[i]
			reads[i], writes[i] = s.reads, s.writes
			row.Readers.Ops += s.reads
			row.Writers.Ops += s.writes
			readLat.Merge(&s.readHist)
			writeLat.Merge(&s.writeHist)
		}
		sec := elapsed.Seconds()
		nr, nw := sumOf(reads, func(x *uint64) uint64 { return *x }), sumOf(writes, func(x *uint64) uint64 { return *x })
		rates = append(rates, float64(nr+nw)/sec)
		readRates = append(readRates, float64(nr)/sec)
		writeRates = append(writeRates, float64(nw)/sec)
		readFair += MaxMin(reads)
		writeFair += MaxMin(writes)
		return nil
	})
	if err != nil {
		return row, err
	}
	row.OpsPerSec, row.Stdev = meanStdev(rates)
	row.Readers.PerSec, _ = meanStdev(readRates)
	row.Writers.PerSec, _ = meanStdev(writeRates)
	row.Readers.Fairness = readFair / float64(spec.Runs)
	row.Writers.Fairness = writeFair / float64(spec.Runs)
	for _, x := range []struct {
		r *RoleRow
		h *latency.Hist
	}{{&row.Readers, &readLat}, {&row.Writers, &writeLat}} {
		x.r.LatP50, x.r.LatP99, x.r.LatMax = x.h.Quantile(0.50), x.h.Quantile(0.99), x.h.Max()
	}
	return row, nil
}
