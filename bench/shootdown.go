package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// The shootdown workload (after KVM's PV TLB flush) is ebizzy-like: every vCPU searches
// records in its chunk of memory through a cached view of the address
// space (its "TLB": the mapping epoch it last saw), and every Chunk records
// it frees its chunk and maps a new one. Remapping takes the mm lock (a
// sync.Locker from the lab, pv-ticket by default), bumps the mapping epoch
// and, still holding the lock as munmap holds mmap_lock, shoots down the
// other vCPUs' views with a pvlock.Shootdown; they refresh their view in the
// handler. Native calls wait for every vCPU, waking halted ones; PV calls
// skip halted ones, which refresh on the way out of their halt.
//
// Before every record a vCPU checks that its view covers every shootdown
// that has returned; a stale view is counted and fails the measurement, so
// the benchmark also checks the PV guarantee under load.
//
// The lock must be one whose waiters either halt through kick or poll
// while they spin (pvlock's ticket locks do both): a waiter that blocks any
// other way, a sync.Mutex waiter say, can never acknowledge a shootdown its
// lock holder is waiting for. Calls give up after a watchdog and the
// measurement then fails with that explanation, instead of hanging.

// Default shootdown lengths: 5 µs per record and a remap every 64 records.
const (
	DefaultRecordWork = 5 * time.Microsecond
	DefaultChunk      = 64
	DefaultRemapWork  = time.Microsecond
)

// ShootdownSpec is one cell of the shootdown comparison: a Spec (its
// Lock is the mm lock, default "pv-ticket"; Workload, VMs, Seed, Params
// and NewLock are not used), the cross-vCPU call's mode and the lengths
// of the work.
type ShootdownSpec struct {
	Spec
	// Mode is the cross-vCPU call's mode: native or PV.
	Mode pvlock.ShootdownMode
	// Record is the CPU time of searching one record, Chunk the records a
	// vCPU searches between two remaps, Remap the work of a remap under
	// the lock (before its shootdown).
	Record time.Duration
	Chunk  int
	Remap  time.Duration
	// Watchdog is how long after the end of a run a shootdown may still
	// wait before the run fails (default 10s).
	Watchdog time.Duration
}

func (s *ShootdownSpec) defaults() {
	s.Spec.defaultsFor("shootdown-" + s.Mode.String())
	orDefault(&s.Record, DefaultRecordWork)
	orDefault(&s.Chunk, DefaultChunk)
	orDefault(&s.Remap, DefaultRemapWork)
	orDefault(&s.Watchdog, 10*time.Second)
}

// ShootdownRow is the result of a ShootdownSpec: means over runs.
type ShootdownRow struct {
	Mode       string  `json:"mode"`
	Lock       string  `json:"lock"`
	Overcommit float64 `json:"overcommit"`
	VCPUs      int     `json:"vcpus"`
	PCPUs      int     `json:"pcpus"`
	Runs       int     `json:"runs"`
	// RecordsPerSec is the mean aggregate rate of records searched (the
	// shootdownRun score); Stdev its standard deviation over runs.
	RecordsPerSec float64 `json:"records_per_sec"`
	Stdev         float64 `json:"stdev"`
	// CallsPerSec is the rate of shootdowns, CallMicros the mean time an
	// initiator spent in one.
	CallsPerSec float64 `json:"calls_per_sec"`
	CallMicros  float64 `json:"call_us"`
	// Acked, Kicked, Deferred and Offline are per shootdown (see
	// pvlock.CallStats).
	Acked    float64 `json:"acked"`
	Kicked   float64 `json:"kicked"`
	Deferred float64 `json:"deferred"`
	Offline  float64 `json:"offline"`
}

// shootdownRun is one prepared shootdown run.
type shootdownRun struct {
	lock   sync.Locker
	sd     *pvlock.Shootdown
	ctx    context.Context
	record int // work units
	remap  int
	chunk  int
	shared uint64 // touched only under the lock

	epoch     atomic.Uint64 // the mapping epoch, bumped by each remap
	completed atomic.Uint64 // highest epoch whose shootdown has returned
	vcpus     []shootdownVCPU

	errOnce sync.Once
	err     error
}

// shootdownVCPU is one vCPU's state, written only by its own thread.
type shootdownVCPU struct {
	view      uint64 // the mapping epoch this vCPU's "TLB" holds
	sum       uint64
	left      int // records until the next remap
	records   uint64
	stale     uint64 // records started with a stale view: must stay 0
	calls     uint64
	callNanos int64
	st        pvlock.CallStats
	_         [64]byte
}

func newShootdownRun(ctx context.Context, lock sync.Locker, nvcpu int, s ShootdownSpec) *shootdownRun {
	e := &shootdownRun{lock: lock, ctx: ctx, record: WorkUnits(s.Record), remap: WorkUnits(s.Remap), chunk: s.Chunk,
		vcpus: make([]shootdownVCPU, nvcpu)}
	for i := range e.vcpus {
		e.vcpus[i].left = 1 + i*s.Chunk/nvcpu // spread the remaps out
	}
	return e
}

// flush is the shootdown handler: drop the stale view.
func (e *shootdownRun) flush(v *pvlock.VCPU) {
	e.vcpus[v.Index()].view = e.epoch.Load()
}

// Op searches one record and remaps when the chunk is used up.
func (e *shootdownRun) Op(v *pvlock.VCPU) {
	m := &e.vcpus[v.Index()]
	if m.view < e.completed.Load() {
		m.stale++
	}
	m.sum = busy(m.sum^m.view, e.record)
	m.records++
	v.Poll()
	if m.left--; m.left <= 0 {
		m.left = e.chunk
		e.remapChunk(v, m)
	}
}

func (e *shootdownRun) remapChunk(v *pvlock.VCPU, m *shootdownVCPU) {
	Acquire(e.lock, v)
	e.shared = busy(e.shared, e.remap)
	ep := e.epoch.Add(1)
	start := time.Now()
	st, err := e.sd.Call(e.ctx, v, nil)
	m.callNanos += int64(time.Since(start))
	e.lock.Unlock()
	if err != nil {
		e.errOnce.Do(func() { e.err = err })
		return
	}
	for {
		c := e.completed.Load()
		if c >= ep || e.completed.CompareAndSwap(c, ep) {
			break
		}
	}
	m.calls++
	m.st.Acked += st.Acked
	m.st.Kicked += st.Kicked
	m.st.Deferred += st.Deferred
	m.st.Offline += st.Offline
}

// MeasureShootdown runs a ShootdownSpec and summarises it.
func MeasureShootdown(ctx context.Context, spec ShootdownSpec) (ShootdownRow, error) {
	spec.defaults()
	if spec.Mode != pvlock.ShootdownPV && spec.Mode != pvlock.ShootdownNative {
		return ShootdownRow{}, fmt.Errorf("bench: shootdown: unknown mode %d", int(spec.Mode))
	}
	lk, vms, err := lockAndVMs(spec.Spec)
	if err != nil {
		return ShootdownRow{}, err
	}
	vm := vms[0]
	n := len(vm.VCPUs())
	row := ShootdownRow{Mode: spec.Mode.String(), Lock: spec.Lock, Overcommit: spec.Overcommit, VCPUs: n,
		PCPUs: len(vm.CPUs()), Runs: spec.Runs}
	run := func(d time.Duration) (*shootdownRun, time.Duration, error) {
		wctx, cancel := context.WithTimeout(ctx, d+spec.Watchdog)
		defer cancel()
		e := newShootdownRun(wctx, lk.New(), n, spec)
		sd, err := pvlock.NewShootdown(vm, spec.Mode, e.flush)
		if err != nil {
			return nil, 0, err
		}
		e.sd = sd
		defer e.sd.Close()
		elapsed, err := runFor(ctx, vms, d, func(v *pvlock.VCPU) func() { return func() { e.Op(v) } })
		if err == nil && e.err != nil {
			err = fmt.Errorf("bench: shootdown with %s (its waiters must halt in kick or poll while they spin): %w", spec.Lock, e.err)
		}
		if err == nil {
			for i, m := range e.vcpus {
				if m.stale != 0 {
					err = errors.Join(err, fmt.Errorf("bench: shootdown: vCPU %d searched %d records with a stale view", i, m.stale))
				}
			}
		}
		return e, elapsed, err
	}
	var rates []float64
	var calls, callNanos, acked, kicked, deferred, offline float64
	var elapsedSum time.Duration
	err = spec.eachRun(ctx, func(r int, d time.Duration) error {
		e, elapsed, err := run(d)
		if err != nil || r < 0 {
			return err
		}
		var records uint64
		for _, m := range e.vcpus {
			records += m.records
			calls += float64(m.calls)
			callNanos += float64(m.callNanos)
			acked += float64(m.st.Acked)
			kicked += float64(m.st.Kicked)
			deferred += float64(m.st.Deferred)
			offline += float64(m.st.Offline)
		}
		rates = append(rates, float64(records)/elapsed.Seconds())
		elapsedSum += elapsed
		return nil
	})
	if err != nil {
		return row, err
	}
	row.RecordsPerSec, row.Stdev = meanStdev(rates)
	if elapsedSum > 0 {
		row.CallsPerSec = calls / elapsedSum.Seconds()
	}
	if calls > 0 {
		row.CallMicros = callNanos / calls / 1e3
		row.Acked, row.Kicked = acked/calls, kicked/calls
		row.Deferred, row.Offline = deferred/calls, offline/calls
	}
	return row, nil
}
