package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/pvlock"
)

// The lockbreak workload (after the kernel's cond_resched_lock): vCPU 0 runs long batches under the
// lock, like KVM write-protecting thousands of pages under mmu_lock, while
// the other vCPUs do short operations on the same lock. Without lock-break a
// short operation can wait for a whole batch; with it, the batch checks
// every step whether the lock is contended (or the host asks the vCPU to
// yield) and lets the waiters in (pvlock.VCPU.CondRelock).

// Default lockbreak lengths: a 2 ms batch checked every 50 µs (the seed's
// 8K pages took about 100 µs), short operations of 500 ns every 20 µs.
const (
	DefaultBatchWork = 2 * time.Millisecond
	DefaultBatchStep = 50 * time.Microsecond
	DefaultShortWork = 500 * time.Nanosecond
	DefaultThinkWork = 20 * time.Microsecond
)

// lockBreak is one prepared lockbreak run.
type lockBreak struct {
	lock sync.Locker
	cont pvlock.Contender // nil: batches never break
	// work units
	batch, step, short, think int
	shared                    uint64 // touched only under the lock
	// written by vCPU 0 only
	batches, breaks uint64
	// lat[i] holds vCPU i's short-operation latencies in ns; nil: not recorded
	lat [][]int64
}

func newLockBreak(lock sync.Locker, useBreak bool, nvcpu int, s LockBreakSpec, record bool) *lockBreak {
	l := &lockBreak{lock: lock, batch: WorkUnits(s.Batch), step: max(WorkUnits(s.Step), 1),
		short: WorkUnits(s.Short), think: WorkUnits(s.Think)}
	if useBreak {
		l.cont = contender(lock)
	}
	if record {
		l.lat = make([][]int64, nvcpu)
		for i := range l.lat {
			l.lat[i] = make([]int64, 0, 1<<14)
		}
	}
	return l
}

// contender returns lock as a pvlock.Contender, looking through a wrapper
// that exposes the lock it wraps (Inner) and adds nothing to Unlock, or nil
// if the lock cannot tell whether it is contended.
func contender(lock sync.Locker) pvlock.Contender {
	if c, ok := lock.(pvlock.Contender); ok {
		return c
	}
	if w, ok := lock.(interface{ Inner() sync.Locker }); ok {
		if c, ok := w.Inner().(pvlock.Contender); ok {
			return c
		}
	}
	return nil
}

// Op runs one batch on vCPU 0 and one short operation on the others.
func (l *lockBreak) Op(v *pvlock.VCPU) {
	if v.Index() == 0 {
		l.runBatch(v)
		return
	}
	l.shortOp(v)
}

func (l *lockBreak) runBatch(v *pvlock.VCPU) {
	Acquire(l.lock, v)
	for done := 0; done < l.batch; done += l.step {
		l.shared = busy(l.shared, min(l.step, l.batch-done))
		if l.cont != nil && v.CondRelock(l.cont) {
			l.breaks++
		}
	}
	l.lock.Unlock()
	l.batches++
}

func (l *lockBreak) shortOp(v *pvlock.VCPU) {
	start := time.Now()
	Acquire(l.lock, v)
	l.shared = busy(l.shared, l.short)
	l.lock.Unlock()
	if l.lat != nil {
		i := v.Index()
		l.lat[i] = append(l.lat[i], int64(time.Since(start)))
	}
	busy(uint64(v.Index()), l.think)
}

func init() {
	RegisterWorkload(Workload{
		Name: "lockbreak",
		Doc: "vCPU 0 holds the lock for 2 ms batches and breaks it every 50 µs when it is " +
			"contended or the host wants the CPU (pvlock.VCPU.CondRelock, if the lock has " +
			"IsContended); the other vCPUs do short operations. pvbench lockbreak reports the " +
			"short operations' latency with and without the break.",
		Unit: "ops",
		Setup: func(lock sync.Locker, nvcpu int, p Params) Instance {
			var s LockBreakSpec
			s.defaults()
			return newLockBreak(lock, true, nvcpu, s, false)
		},
	})
}

// LockBreakSpec is one cell of the lockbreak comparison: a Spec (its
// Lock, default "pv-ticket", must have IsContended to break; Workload,
// VMs, Seed, Params and NewLock are not used) and the lengths of the
// work.
type LockBreakSpec struct {
	Spec
	// Break makes batches call VCPU.CondRelock after every step.
	Break bool
	// Batch is the CPU time of one batch, Step the work between two
	// checks, Short a short operation's critical section and Think the
	// work a short-operation vCPU does between two of them.
	Batch, Step, Short, Think time.Duration
}

func (s *LockBreakSpec) defaults() {
	s.Spec.defaultsFor("lockbreak")
	orDefault(&s.Batch, DefaultBatchWork)
	orDefault(&s.Step, DefaultBatchStep)
	orDefault(&s.Short, DefaultShortWork)
	orDefault(&s.Think, DefaultThinkWork)
}

// LockBreakRow is the result of a LockBreakSpec. Latencies pool the short
// operations of all runs; rates are means over runs.
type LockBreakRow struct {
	Lock       string  `json:"lock"`
	Overcommit float64 `json:"overcommit"`
	VCPUs      int     `json:"vcpus"`
	PCPUs      int     `json:"pcpus"`
	Runs       int     `json:"runs"`
	Break      bool    `json:"lock_break"`
	// ShortOps is the number of short operations measured.
	ShortOps uint64 `json:"short_ops"`
	// P50, P99 and Max are short-operation latencies (lock wait and
	// critical section) in microseconds.
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
	Max float64 `json:"max_us"`
	// ShortPerSec is the short operations' mean aggregate rate.
	ShortPerSec float64 `json:"short_ops_per_sec"`
	// BatchesPerSec is the batch vCPU's mean rate; BatchStdev its
	// standard deviation over runs.
	BatchesPerSec float64 `json:"batches_per_sec"`
	BatchStdev    float64 `json:"batch_stdev"`
	// Breaks and Yields are per batch: lock breaks, and breaks that also
	// gave the CPU away because the host asked.
	Breaks float64 `json:"breaks_per_batch"`
	Yields float64 `json:"yields_per_batch"`
}

// MeasureLockBreak runs a LockBreakSpec and summarises it.
func MeasureLockBreak(ctx context.Context, spec LockBreakSpec) (LockBreakRow, error) {
	spec.defaults()
	lk, err := locks.Lookup(spec.Lock)
	if err != nil {
		return LockBreakRow{}, err
	}
	if spec.Break && contender(lk.New()) == nil {
		return LockBreakRow{}, fmt.Errorf("bench: lockbreak with %s: the lock has no IsContended, so it cannot break", spec.Lock)
	}
	vms, err := newVMs(spec.Spec)
	if err != nil {
		return LockBreakRow{}, err
	}
	vm := vms[0]
	n := len(vm.VCPUs())
	if n < 2 {
		return LockBreakRow{}, fmt.Errorf("bench: lockbreak needs at least 2 vCPUs (a batch vCPU and a short one), got %d", n)
	}
	row := LockBreakRow{Lock: spec.Lock, Overcommit: spec.Overcommit, VCPUs: n, PCPUs: len(vm.CPUs()),
		Runs: spec.Runs, Break: spec.Break}
	var lat []int64
	var batchRates, shortRates []float64
	var batches, breaks, yields uint64
	err = spec.eachRun(ctx, func(r int, d time.Duration) error {
		inst := newLockBreak(lk.New(), spec.Break, n, spec, r >= 0)
		elapsed, err := runFor(ctx, vms, d, func(v *pvlock.VCPU) func() { return func() { inst.Op(v) } })
		if err != nil || r < 0 {
			return err
		}
		var short uint64
		for _, l := range inst.lat {
			lat = append(lat, l...)
			short += uint64(len(l))
		}
		batchRates = append(batchRates, float64(inst.batches)/elapsed.Seconds())
		shortRates = append(shortRates, float64(short)/elapsed.Seconds())
		batches += inst.batches
		breaks += inst.breaks
		yields += vm.VCPUs()[0].Yields()
		return nil
	})
	if err != nil {
		return row, err
	}
	row.ShortOps = uint64(len(lat))
	row.P50, row.P99, row.Max = latencyMicros(lat)
	row.BatchesPerSec, row.BatchStdev = meanStdev(batchRates)
	row.ShortPerSec, _ = meanStdev(shortRates)
	if batches > 0 {
		row.Breaks = float64(breaks) / float64(batches)
		row.Yields = float64(yields) / float64(batches)
	}
	return row, nil
}

// latencyMicros returns the median, 99th percentile and maximum of ns, in
// microseconds (nearest-rank percentiles, see rank). It sorts ns.
func latencyMicros(ns []int64) (p50, p99, maxv float64) {
	if len(ns) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ns)
	at := func(q float64) float64 { return float64(ns[rank(q, len(ns))-1]) / 1e3 }
	return at(0.50), at(0.99), at(1)
}
