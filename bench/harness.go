package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/latency"
	"github.com/pvlock/pvlock/pvlock"
)

// Spec is one cell of a comparison: a workload, a lock and an overcommit
// factor, measured Runs times. It is the lab's one description of a cell:
// MeasureLockBreak and MeasureShootdown take it too, inside their own
// specs, which add what only they need.
type Spec struct {
	Workload string
	// Lock is a lab lock (bench/locks).
	Lock       string
	Overcommit float64
	// CPUs are the physical CPUs; nil means all allowed CPUs.
	CPUs []int
	// Pinning places vCPUs on CPUs (default one CPU each, round-robin).
	Pinning pvlock.Pinning
	// VMs is the number of VMs sharing the CPUs (default 1). Each has its
	// own instance of the workload and its own locks; the overcommit
	// factor counts the vCPUs of all of them, which are split as evenly
	// as possible. With PinEach the VMs continue one round-robin over
	// the CPUs.
	VMs int
	// Runs is the number of measured runs (default 3).
	Runs int
	// Duration is the length of each run (default 1s).
	Duration time.Duration
	// Warmup is an unmeasured run before the first one (default 100ms;
	// negative disables it).
	Warmup time.Duration
	// Seed seeds the workloads' random choices: run r of VM k gets its
	// own seed derived from (Seed, r, k), the same in every invocation.
	Seed uint64
	// Params tune the workload (its Seed is set from the Seed above).
	Params Params
	// NewLock, if set, makes the cell's locks instead of the registered
	// Lock's constructor (Lock still names the row): a variant of a
	// registered lock, such as one with a fixed spin threshold.
	NewLock func() sync.Locker
	// Load, if set, takes a share of one of the CPUs away from the vCPUs
	// for the whole cell, warm-up included, as a host's other guests
	// would (HostLoad).
	Load *HostLoad
}

// Row is the result of a Spec: means and standard deviations over runs.
// Its JSON field names are part of pvbench's output format.
type Row struct {
	Workload   string  `json:"workload"`
	Lock       string  `json:"lock"`
	Overcommit float64 `json:"overcommit"`
	VCPUs      int     `json:"vcpus"`
	PCPUs      int     `json:"pcpus"`
	Runs       int     `json:"runs"`
	// OpsPerSec is the mean aggregate throughput in the workload's unit;
	// Stdev its standard deviation over runs.
	OpsPerSec float64 `json:"ops_per_sec"`
	Stdev     float64 `json:"stdev"`
	// Halts and Kicks are per 1000 operations: vCPU halts, and kicks the
	// vCPUs received.
	Halts float64 `json:"halts"`
	Kicks float64 `json:"kicks"`
	// Passive is the number of passive waits per 1000 operations: waits
	// outside the saturated lock (pvlock.Policy.Restrict); 0 for locks
	// without a gate.
	Passive float64 `json:"passive"`
	// StealPct is the share of vCPU time spent runnable but not running.
	StealPct float64 `json:"steal_pct"`
	// IdlePct is the share of the CPUs' time (those the vCPUs run on)
	// that was idle during the measured runs, as /proc/stat counts it:
	// time no thread wanted. Waiters kept asleep while work waits, or a
	// CPU whose every vCPU waits, show here; -1 where the platform does
	// not report it.
	IdlePct float64 `json:"idle_pct"`
	// Fairness is max/min of per-vCPU lock acquisitions (1 is perfectly
	// fair; see MaxMin), averaged over runs.
	Fairness float64 `json:"fairness_max_min"`

	// VMs is the number of VMs the vCPUs were split into.
	VMs int `json:"vms"`
	// Unit names the workload's operation ("ops", "records", "messages").
	Unit string `json:"unit"`
	// Jain is Jain's fairness index of per-vCPU lock acquisitions
	// (1 = perfectly fair, 1/vCPUs = one vCPU got everything), averaged
	// over runs.
	Jain float64 `json:"jain"`
	// LatP50, LatP99 and LatMax describe the time from calling Lock to
	// owning the lock, over a sample of acquisitions of all runs
	// (one in SampleEvery), in nanoseconds.
	LatP50 uint64 `json:"lat_p50_ns"`
	LatP99 uint64 `json:"lat_p99_ns"`
	LatMax uint64 `json:"lat_max_ns"`
	// Polls is the number of halt-polls begun per 1000 operations;
	// PollHitPct the share of them that caught their kick, and
	// PollInvalidPct the share cut short by a sibling vCPU becoming
	// runnable on the CPU (see pvlock.Policy.HaltPoll).
	Polls          float64 `json:"polls"`
	PollHitPct     float64 `json:"poll_hit_pct"`
	PollInvalidPct float64 `json:"poll_invalid_pct"`
	// HostLoad describes the cell's Spec.Load; empty without one.
	HostLoad string `json:"host_load,omitempty"`

	// tally is what the row's fields were computed from, kept so that
	// MergeRows can pool rows measured apart; rows read back from JSON
	// have none.
	tally *tally
}

// tally holds the sums of a cell's measured runs that its Row is computed
// from. Pooled tallies give the Row of all their runs, as if measured in
// one cell.
type tally struct {
	rates                []float64 // throughput of each run, units/s
	units, passive       float64   // operations, and passive waits
	halts, kicks, polls  uint64
	pollHits, pollsWaste uint64
	fairSum, jainSum     float64 // sums of each run's max/min and Jain index
	steal, vcpuTime      time.Duration
	cpu                  cpuTimes
	lat                  latency.Hist
}

// add pools o's runs into t.
func (t *tally) add(o *tally) {
	t.rates = append(t.rates, o.rates...)
	t.units += o.units
	t.passive += o.passive
	t.halts += o.halts
	t.kicks += o.kicks
	t.polls += o.polls
	t.pollHits += o.pollHits
	t.pollsWaste += o.pollsWaste
	t.fairSum += o.fairSum
	t.jainSum += o.jainSum
	t.steal += o.steal
	t.vcpuTime += o.vcpuTime
	t.cpu.idle += o.cpu.idle
	t.cpu.total += o.cpu.total
	t.lat.Merge(&o.lat)
}

// fill sets row's measured fields from t.
func (t *tally) fill(row *Row) {
	row.Runs = len(t.rates)
	row.OpsPerSec, row.Stdev = meanStdev(t.rates)
	if t.units > 0 {
		row.Halts = float64(t.halts) * 1000 / t.units
		row.Kicks = float64(t.kicks) * 1000 / t.units
		row.Polls = float64(t.polls) * 1000 / t.units
		row.Passive = t.passive * 1000 / t.units
	}
	if t.polls > 0 {
		row.PollHitPct = 100 * float64(t.pollHits) / float64(t.polls)
		row.PollInvalidPct = 100 * float64(t.pollsWaste) / float64(t.polls)
	}
	row.IdlePct = t.cpu.idlePct()
	if t.vcpuTime > 0 {
		row.StealPct = 100 * float64(t.steal) / float64(t.vcpuTime)
	}
	if n := len(t.rates); n > 0 {
		row.Fairness = t.fairSum / float64(n)
		row.Jain = t.jainSum / float64(n)
	}
	row.LatP50, row.LatP99, row.LatMax = t.lat.Quantile(0.50), t.lat.Quantile(0.99), t.lat.Max()
	row.tally = t
}

// MergeRows pools rows of one cell measured apart, in rounds alternated
// with other cells, into the Row of all their runs: throughput and its
// standard deviation over every run, fairness averaged over runs, events
// per operation and latency quantiles over all of them. The rows must come
// from Measure in this process (rows read back from JSON keep no per-run
// data) and describe the same cell.
func MergeRows(rows []Row) (Row, error) {
	if len(rows) == 0 {
		return Row{}, fmt.Errorf("bench: no rows to merge")
	}
	first := rows[0]
	var t tally
	for _, r := range rows {
		if r.tally == nil {
			return Row{}, fmt.Errorf("bench: cannot merge a %s row of %s at %gx: it keeps no per-run data (read back, not measured here)", r.Workload, r.Lock, r.Overcommit)
		}
		if r.Workload != first.Workload || r.Lock != first.Lock || r.Overcommit != first.Overcommit ||
			r.VCPUs != first.VCPUs || r.PCPUs != first.PCPUs || r.VMs != first.VMs || r.HostLoad != first.HostLoad {
			return Row{}, fmt.Errorf("bench: cannot merge %s on %s at %gx with %s on %s at %gx: not one cell",
				first.Workload, first.Lock, first.Overcommit, r.Workload, r.Lock, r.Overcommit)
		}
		t.add(r.tally)
	}
	row := first
	t.fill(&row)
	return row, nil
}

// defaults fills in what every cell shares: one VM, 3 measured runs of
// 1s after a 100ms warm-up (a negative warm-up means none).
func (s *Spec) defaults() {
	orDefault(&s.Runs, 3)
	orDefault(&s.Duration, time.Second)
	if s.Warmup == 0 {
		s.Warmup = 100 * time.Millisecond
	}
	orDefault(&s.VMs, 1)
}

// defaultsFor fills in the defaults of a one-VM cell of the named
// workload: the lock is "pv-ticket" unless set.
func (s *Spec) defaultsFor(workload string) {
	s.Workload, s.VMs = workload, 1
	if s.Lock == "" {
		s.Lock = "pv-ticket"
	}
	s.defaults()
}

// orDefault sets *v to def unless it is positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// eachRun calls run for the warm-up (r = -1, for Warmup, if positive) and
// then for every measured run (r = 0, 1, ..., for Duration), stopping at
// the first error or when ctx ends.
func (s *Spec) eachRun(ctx context.Context, run func(r int, d time.Duration) error) error {
	if s.Warmup > 0 {
		if err := run(-1, s.Warmup); err != nil {
			return err
		}
	}
	for r := 0; r < s.Runs; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := run(r, s.Duration); err != nil {
			return err
		}
	}
	return nil
}

// Measure runs a Spec and summarises it.
func Measure(ctx context.Context, spec Spec) (Row, error) {
	spec.defaults()
	wl, err := WorkloadByName(spec.Workload)
	if err != nil {
		return Row{}, err
	}
	lk, err := locks.Lookup(spec.Lock)
	if err != nil {
		return Row{}, err
	}
	if spec.NewLock != nil {
		lk.New = spec.NewLock
	}
	vms, err := newVMs(spec)
	if err != nil {
		return Row{}, err
	}
	row := Row{Workload: spec.Workload, Lock: spec.Lock, Overcommit: spec.Overcommit,
		PCPUs: len(vms[0].CPUs()), Runs: spec.Runs, VMs: len(vms), Unit: wl.Unit}
	for _, vm := range vms {
		row.VCPUs += len(vm.VCPUs())
	}
	if spec.Load != nil {
		if !slices.Contains(vms[0].CPUs(), spec.Load.CPU) {
			return row, fmt.Errorf("host load: CPU %d is not one of the vCPUs' CPUs %v", spec.Load.CPU, vms[0].CPUs())
		}
		stop, err := spec.Load.Start()
		if err != nil {
			return row, err
		}
		defer stop()
		row.HostLoad = spec.Load.String()
	}
	var (
		t       tally
		before  = vcpuCounters(vms)
		passive = func() uint64 { return 0 }
	)
	if lk.Passive != nil {
		passive = lk.Passive
	}
	passiveBefore := passive()
	err = spec.eachRun(ctx, func(r int, d time.Duration) error {
		res, err := runOnce(ctx, vms, wl, lk, spec, r, d)
		switch {
		case err != nil && r < 0:
			return fmt.Errorf("warm-up: %w", err)
		case err != nil:
			return fmt.Errorf("run %d: %w", r+1, err)
		case r < 0:
			return nil
		}
		t.rates = append(t.rates, float64(res.units)/res.elapsed.Seconds())
		t.units += float64(res.units)
		t.steal += res.steal
		t.cpu.idle += res.cpu.idle
		t.cpu.total += res.cpu.total
		t.vcpuTime += res.elapsed * time.Duration(row.VCPUs)
		counts := res.fairnessCounts()
		t.fairSum += MaxMin(counts)
		t.jainSum += Jain(counts)
		t.lat.Merge(&res.lat)
		return nil
	})
	if err != nil {
		return row, err
	}
	after := vcpuCounters(vms)
	t.halts = after.halts - before.halts
	t.kicks = after.kicks - before.kicks
	t.polls = after.polls - before.polls
	t.pollHits = after.pollHits - before.pollHits
	t.pollsWaste = after.pollsInvalid - before.pollsInvalid
	t.passive = float64(passive() - passiveBefore)
	t.fill(&row)
	return row, nil
}

// lockAndVMs looks up the Spec's lock and makes its VMs (newVMs): how a
// lab workload that runs one lock starts.
func lockAndVMs(spec Spec) (locks.Kind, []*pvlock.VM, error) {
	lk, err := locks.Lookup(spec.Lock)
	if err != nil {
		return locks.Kind{}, nil, err
	}
	vms, err := newVMs(spec)
	return lk, vms, err
}

// newVMs makes the Spec's VMs, the lab's one VM builder: round(Overcommit·CPUs)
// vCPUs in all, split as evenly as possible, continuing one pinning
// round-robin. They are named after the workload, lock and factor (and
// numbered when there are several).
func newVMs(spec Spec) ([]*pvlock.VM, error) {
	cfg, err := pvlock.Overcommit(spec.Overcommit, spec.CPUs)
	if err != nil {
		return nil, err
	}
	if spec.VMs > cfg.VCPUs {
		return nil, fmt.Errorf("bench: %gx on %d CPUs is %d vCPUs, too few for %d VMs",
			spec.Overcommit, len(cfg.CPUs), cfg.VCPUs, spec.VMs)
	}
	var vms []*pvlock.VM
	first := 0
	for k := 0; k < spec.VMs; k++ {
		n := cfg.VCPUs / spec.VMs
		if k < cfg.VCPUs%spec.VMs {
			n++
		}
		name := fmt.Sprintf("%s-%s-%gx", spec.Workload, spec.Lock, spec.Overcommit)
		if spec.VMs > 1 {
			name += fmt.Sprintf("-vm%d", k)
		}
		vm, err := pvlock.NewVM(pvlock.Config{
			Name:     name,
			VCPUs:    n,
			CPUs:     cfg.CPUs,
			Pinning:  spec.Pinning,
			FirstCPU: first,
		})
		if err != nil {
			return nil, err
		}
		first += n
		vms = append(vms, vm)
	}
	return vms, nil
}

// runResult is what one run of all VMs measured. Per-vCPU slices list the
// vCPUs VM by VM.
type runResult struct {
	ops     []uint64 // Op calls per vCPU
	acq     []uint64 // lock acquisitions charged to each vCPU
	plain   uint64   // acquisitions not charged to any vCPU
	units   uint64   // work done, in the workload's unit
	elapsed time.Duration
	steal   time.Duration
	cpu     cpuTimes // the CPUs' idle and total ticks over the run
	lat     latency.Hist
}

// fairnessCounts returns the per-vCPU counts fairness is judged on: lock
// acquisitions when every one of them was charged to a vCPU, Op calls
// otherwise.
func (r *runResult) fairnessCounts() []uint64 {
	var total uint64
	for _, a := range r.acq {
		total += a
	}
	if total > 0 && r.plain == 0 {
		return r.acq
	}
	return r.ops
}

// runSeed derives the seed of VM k in run r (r = -1: the warm-up).
func runSeed(seed uint64, r, k int) uint64 {
	return splitmix(splitmix(seed^uint64(r+1)*0x9e3779b97f4a7c15) ^ uint64(k+1))
}

// splitmix is the SplitMix64 finaliser: a cheap bijective scrambler.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// runOnce sets up a fresh instance of the workload with fresh locks in
// every VM, runs all VMs together for d (runFor) and collects the
// measurements.
func runOnce(ctx context.Context, vms []*pvlock.VM, wl Workload, lk locks.Kind, spec Spec, r int, d time.Duration) (*runResult, error) {
	insts := make([]Instance, len(vms))
	meters := make([]*meter, len(vms))
	index := make(map[*pvlock.VM]int, len(vms))
	offset := make([]int, len(vms))
	total := 0
	for k, vm := range vms {
		n := len(vm.VCPUs())
		m := newMeter(n)
		p := spec.Params
		p.Seed = runSeed(spec.Seed, r, k)
		p.NewLock = func() sync.Locker { return m.wrap(lk.New()) }
		insts[k], meters[k], index[vm], offset[k] = wl.Setup(m.wrap(lk.New()), n, p), m, k, total
		total += n
	}
	counts := make([]paddedCount, total)
	cpus := vmCPUs(vms)
	cpuBefore := readCPUTimes(cpus)
	elapsed, err := runFor(ctx, vms, d, func(v *pvlock.VCPU) func() {
		k := index[v.VM()]
		inst, c := insts[k], &counts[offset[k]+v.Index()]
		return func() {
			inst.Op(v)
			c.n++
		}
	})
	if err != nil {
		return nil, err
	}
	res := &runResult{ops: make([]uint64, total), elapsed: elapsed}
	if cpuAfter := readCPUTimes(cpus); cpuBefore.total != 0 && cpuAfter.total >= cpuBefore.total {
		res.cpu = cpuAfter.sub(cpuBefore)
	}
	for i := range counts {
		res.ops[i] = counts[i].n
	}
	for k, vm := range vms {
		if c, ok := insts[k].(Checker); ok {
			if err := c.Check(); err != nil {
				return nil, fmt.Errorf("%s on %s: %w", wl.Name, vm.Name(), err)
			}
		}
		if u, ok := insts[k].(UnitCounter); ok {
			res.units += u.Units()
		} else {
			for i := range vm.VCPUs() {
				res.units += res.ops[offset[k]+i]
			}
		}
		acq, plain := meters[k].acquisitions()
		res.acq = append(res.acq, acq...)
		res.plain += plain
		meters[k].mergeInto(&res.lat)
		for _, v := range vm.VCPUs() {
			res.steal += v.Steal()
		}
	}
	return res, nil
}

// vmCPUs returns the CPUs that vms run on, each once.
func vmCPUs(vms []*pvlock.VM) []int {
	var cpus []int
	for _, vm := range vms {
		for _, c := range vm.CPUs() {
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	return cpus
}

// runFor is the lab's one runner: it runs all vms together for d, every
// vCPU calling in a loop the op that newOp made for it, and returns the
// time on the monotonic clock from the start of the first vCPU until the
// last one noticed the end. An op in progress at the end is finished, not
// interrupted (a vCPU stuck waiting for a lock is waited for).
func runFor(ctx context.Context, vms []*pvlock.VM, d time.Duration, newOp func(v *pvlock.VCPU) func()) (time.Duration, error) {
	var (
		stop    atomic.Bool
		started atomic.Int64 // monoNow()+1 at the first vCPU's start
		timer   *time.Timer  // set by the vCPU that stored started
	)
	err := pvlock.RunAll(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		op := newOp(v)
		if started.CompareAndSwap(0, int64(monoNow())+1) {
			timer = time.AfterFunc(d, func() { stop.Store(true) })
		}
		for !stop.Load() && ctx.Err() == nil {
			op()
		}
		return nil
	}, vms...)
	end := monoNow()
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		return 0, err
	}
	s := started.Load()
	if s == 0 {
		return 0, fmt.Errorf("bench: no vCPU started: %w", context.Cause(ctx))
	}
	return end - time.Duration(s-1), nil
}

type paddedCount struct {
	n uint64
	_ [120]byte
}

type counters struct{ halts, kicks, polls, pollHits, pollsInvalid uint64 }

func vcpuCounters(vms []*pvlock.VM) counters {
	var c counters
	for _, vm := range vms {
		for _, v := range vm.VCPUs() {
			k := v.Waiter().Counters()
			c.halts += k.Halts
			c.kicks += k.KicksReceived
			c.polls += k.PollsAttempted
			c.pollHits += k.PollsSuccessful
			c.pollsInvalid += k.PollsInvalid
		}
	}
	return c
}

// rank is the lab's one percentile definition: the nearest rank
// (1-based) of the q-quantile (0 < q <= 1) of n samples, ⌈q·n⌉ and at
// least 1. The latency histogram and the lockbreak samples both use it.
func rank(q float64, n int) int {
	return max(int(math.Ceil(q*float64(n))), 1)
}

// meanStdev returns the mean of xs and their sample standard deviation.
func meanStdev(xs []float64) (mean, stdev float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		stdev += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(stdev / float64(len(xs)-1))
}
