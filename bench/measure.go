package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// Spec is one cell of a comparison: a workload, a lock and an overcommit
// factor, measured Runs times.
type Spec struct {
	Workload   string
	Lock       string
	Overcommit float64
	// CPUs are the physical CPUs; nil means all allowed CPUs.
	CPUs []int
	// Pinning places vCPUs on CPUs (default one CPU each, round-robin).
	Pinning pvlock.Pinning
	// Runs is the number of measured runs (default 3).
	Runs int
	// Duration is the length of each run (default 1s).
	Duration time.Duration
	// Warmup is an unmeasured run before the first one (default 100ms;
	// negative disables it).
	Warmup time.Duration
	// Params tune the workload.
	Params Params
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
	// OpsPerSec is the mean aggregate throughput; Stdev its standard
	// deviation over runs.
	OpsPerSec float64 `json:"ops_per_sec"`
	Stdev     float64 `json:"stdev"`
	// Halts and Kicks are per 1000 operations: vCPU halts, and kicks the
	// vCPUs received.
	Halts float64 `json:"halts"`
	Kicks float64 `json:"kicks"`
	// StealPct is the share of vCPU time spent runnable but not running.
	StealPct float64 `json:"steal_pct"`
	// Fairness is max/min of per-vCPU operations (1 is perfectly fair).
	Fairness float64 `json:"fairness_max_min"`
}

func (s *Spec) defaults() {
	if s.Runs <= 0 {
		s.Runs = 3
	}
	if s.Duration <= 0 {
		s.Duration = time.Second
	}
	if s.Warmup == 0 {
		s.Warmup = 100 * time.Millisecond
	}
}

// Measure runs a Spec and summarises it.
func Measure(ctx context.Context, spec Spec) (Row, error) {
	spec.defaults()
	wl, err := WorkloadByName(spec.Workload)
	if err != nil {
		return Row{}, err
	}
	lk, err := Lock(spec.Lock)
	if err != nil {
		return Row{}, err
	}
	cfg, err := pvlock.Overcommit(spec.Overcommit, spec.CPUs)
	if err != nil {
		return Row{}, err
	}
	cfg.Pinning = spec.Pinning
	cfg.Name = fmt.Sprintf("%s-%s-%gx", spec.Workload, spec.Lock, spec.Overcommit)
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		return Row{}, err
	}
	row := Row{Workload: spec.Workload, Lock: spec.Lock, Overcommit: spec.Overcommit,
		VCPUs: cfg.VCPUs, PCPUs: len(vm.CPUs()), Runs: spec.Runs}
	if spec.Warmup > 0 {
		inst := wl.Setup(lk.New(), cfg.VCPUs, spec.Params)
		if _, _, err := runInstance(ctx, vm, inst, spec.Warmup); err != nil {
			return row, err
		}
	}
	var rates []float64
	var ops, halts, kicks, fairSum float64
	var steal, busyTime time.Duration
	for r := 0; r < spec.Runs; r++ {
		if err := ctx.Err(); err != nil {
			return row, err
		}
		inst := wl.Setup(lk.New(), cfg.VCPUs, spec.Params)
		before := vcpuCounters(vm)
		counts, elapsed, err := runInstance(ctx, vm, inst, spec.Duration)
		if err != nil {
			return row, err
		}
		after := vcpuCounters(vm)
		var total uint64
		minOps, maxOps := uint64(math.MaxUint64), uint64(0)
		for _, c := range counts {
			total += c
			minOps, maxOps = min(minOps, c), max(maxOps, c)
		}
		rates = append(rates, float64(total)/elapsed.Seconds())
		ops += float64(total)
		halts += float64(after.halts - before.halts)
		kicks += float64(after.kicks - before.kicks)
		for _, v := range vm.VCPUs() {
			steal += v.Steal()
		}
		busyTime += elapsed * time.Duration(cfg.VCPUs)
		if minOps == 0 {
			fairSum += math.Inf(1)
		} else {
			fairSum += float64(maxOps) / float64(minOps)
		}
	}
	row.OpsPerSec, row.Stdev = meanStdev(rates)
	if ops > 0 {
		row.Halts = halts * 1000 / ops
		row.Kicks = kicks * 1000 / ops
	}
	if busyTime > 0 {
		row.StealPct = 100 * float64(steal) / float64(busyTime)
	}
	row.Fairness = fairSum / float64(spec.Runs)
	return row, nil
}

type counters struct{ halts, kicks uint64 }

func vcpuCounters(vm *pvlock.VM) counters {
	var c counters
	for _, v := range vm.VCPUs() {
		k := v.Waiter().Counters()
		c.halts += k.Halts
		c.kicks += k.KicksReceived
	}
	return c
}

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
