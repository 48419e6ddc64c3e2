package bench

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// Workload is something vCPUs do with a lock. An Instance is set up once
// per run and shared by the run's vCPUs.
type Workload struct {
	// Name is the workload's name in tables and benchmark names.
	Name string
	// Doc says what the workload stresses and why.
	Doc string
	// Unit names one operation in reports ("ops", "records").
	Unit string
	// Setup prepares a run of nvcpu vCPUs around lock.
	Setup func(lock sync.Locker, nvcpu int, p Params) Instance
}

// Instance is one prepared run of a workload.
type Instance interface {
	// Op performs one operation on vCPU v; it is called in a loop until
	// the run ends, so it must return in bounded time whatever the other
	// vCPUs do (never wait indefinitely for another vCPU). It should take
	// its locks with Acquire(lock, v), which charges the acquisition to v
	// for the fairness measures.
	Op(v *pvlock.VCPU)
}

// Params tune workloads; zero fields take the workload's defaults.
type Params struct {
	// CriticalWork and OutsideWork are the CPU time of the busy work
	// lockloop does inside and outside its critical section.
	CriticalWork, OutsideWork time.Duration
	// Seed seeds every random choice of the workload (per-vCPU generators
	// derived from it), so a run's sequence of choices is reproducible.
	// Measure sets it from Spec.Seed.
	Seed uint64
	// NewLock makes further locks of the kind under test, for workloads
	// that need more than the one Setup is given (hackbench's queues).
	// Call it only from Setup. Nil means Setup's lock is the only one.
	// Measure sets it.
	NewLock func() sync.Locker
	// WriteEvery is rwloop's write ratio: one operation in WriteEvery
	// writes, the others read (default DefaultWriteEvery).
	WriteEvery int
}

// Checker is implemented by instances that can verify their data structure
// after a run (every vCPU stopped). Measure fails the run on an error: a
// broken invariant means the lock let two vCPUs in at once.
type Checker interface {
	Check() error
}

// UnitCounter is implemented by instances whose Op does not always do one
// unit of work (a hackbench receiver finding its queue empty). Measure
// then reports Units()/s instead of Op calls per second.
type UnitCounter interface {
	Units() uint64
}

var workloads = map[string]Workload{}

// RegisterWorkload adds a workload to the lab.
func RegisterWorkload(w Workload) {
	if _, dup := workloads[w.Name]; dup {
		panic("bench: workload " + w.Name + " registered twice")
	}
	workloads[w.Name] = w
}

// WorkloadByName returns the named workload.
func WorkloadByName(name string) (Workload, error) {
	w, ok := workloads[name]
	if !ok {
		return Workload{}, fmt.Errorf("bench: unknown workload %q (known: %v)", name, WorkloadNames())
	}
	return w, nil
}

// WorkloadNames lists the registered workloads, sorted.
func WorkloadNames() []string {
	return slices.Sorted(maps.Keys(workloads))
}

// sumOf adds up f over the elements of xs (per-vCPU state, say).
func sumOf[T any](xs []T, f func(*T) uint64) uint64 {
	var n uint64
	for i := range xs {
		n += f(&xs[i])
	}
	return n
}

// Default lockloop lengths: a short critical section and twenty times as
// much work outside it, so that two CPUs contend often but not always.
const (
	DefaultCriticalWork = 500 * time.Nanosecond
	DefaultOutsideWork  = 10 * time.Microsecond
)

// busy does n units of work and returns a value derived from it. It is
// never inlined: inlined into a caller that drops the result, the
// compiler would delete the work and leave an empty counting loop, so
// the calibration and the workloads would spin different loops.
//
//go:noinline
func busy(seed uint64, n int) uint64 {
	x := seed | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var unitCost struct {
	once sync.Once
	ns   float64
}

// WorkUnits converts a CPU time into units of busy work on this machine,
// measured once: the fastest of 20 rounds of about 0.1 ms each, short
// enough that on a loaded machine some rounds run without being preempted.
func WorkUnits(d time.Duration) int {
	unitCost.once.Do(func() {
		const n = 50000
		best := time.Duration(1 << 62)
		for i := 0; i < 20; i++ {
			start := time.Now()
			busy(uint64(i), n)
			best = min(best, time.Since(start))
		}
		unitCost.ns = max(float64(best.Nanoseconds())/n, 0.01)
	})
	return int(float64(d.Nanoseconds())/unitCost.ns + 0.5)
}

type lockloop struct {
	lock   sync.Locker
	cs, nc int
	shared uint64 // updated only under the lock
	_      [56]byte
}

func (l *lockloop) Op(v *pvlock.VCPU) {
	Acquire(l.lock, v)
	l.shared = busy(l.shared, l.cs)
	l.lock.Unlock()
	busy(uint64(v.Index()), l.nc)
}

func init() {
	RegisterWorkload(Workload{
		Name: "lockloop",
		Doc: "Each vCPU takes the lock, does a short critical section on shared state, " +
			"releases it and does twenty times as much work outside. It isolates the " +
			"lock's hand-off cost and shows lock-waiter preemption directly: with more " +
			"vCPUs than CPUs, a FIFO lock handed to a descheduled vCPU stalls everyone.",
		Unit: "ops",
		Setup: func(lock sync.Locker, nvcpu int, p Params) Instance {
			if p.CriticalWork == 0 {
				p.CriticalWork = DefaultCriticalWork
			}
			if p.OutsideWork == 0 {
				p.OutsideWork = DefaultOutsideWork
			}
			return &lockloop{lock: lock, cs: WorkUnits(p.CriticalWork), nc: WorkUnits(p.OutsideWork)}
		},
	})
}
