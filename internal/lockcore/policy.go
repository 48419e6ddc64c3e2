package lockcore

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
)

// DefaultSpinThreshold is the number of polls a PV waiter spins before it
// halts (pvlock.DefaultSpinThreshold): the kernel's SPIN_THRESHOLD.
const DefaultSpinThreshold = 1 << 15

// DefaultHaltTimeout bounds a single halt by default
// (pvlock.DefaultHaltTimeout).
const DefaultHaltTimeout = time.Second

// DefaultYieldSlice is the default yield slice (pvlock.DefaultYieldSlice).
const DefaultYieldSlice = 2 * time.Millisecond

// The process-wide policy, pvlock.Policy: pvlock's SetPolicy writes it and
// CurrentPolicy reads it. Each field is stored here, once, under its
// Policy name (Stats as StatsOn, since Stats is the statistics type),
// except HaltPoll and HaltPollAdaptive, which kick stores (kick.SetHaltPoll)
// because kick reads them and lockcore is above kick. Durations are in
// nanoseconds. The defaults are set by init below.
var (
	// PVSpin is whether PV locks may halt (the kernel's nopvspin, inverted).
	PVSpin atomic.Bool
	// StatsOn is whether locks count their acquisitions (Policy.Stats).
	// Slow-path events are counted whatever it says.
	StatsOn atomic.Bool
	// HaltTimeout is the watchdog bound of one halt, ns; <= 0: none.
	HaltTimeout atomic.Int64
	// DirectedYield is whether YieldTo yields.
	DirectedYield atomic.Bool
	// Restrict is whether PV locks restrict concurrency (Gate).
	Restrict atomic.Bool
	// YieldSlice is how long a vCPU that shares its CPU runs after a
	// preemption before pvlock's VCPU.CondRelock yields, ns; <= 0: never.
	YieldSlice atomic.Int64
)

func init() {
	PVSpin.Store(true)
	StatsOn.Store(true)
	HaltTimeout.Store(int64(DefaultHaltTimeout))
	DirectedYield.Store(true)
	Restrict.Store(true)
	YieldSlice.Store(int64(DefaultYieldSlice))
}

var spinCal struct {
	once sync.Once
	ns   float64 // nanoseconds per spin iteration (one poll + one PAUSE)
}

// SpinCost returns the measured cost of one spin iteration on this machine
// (one load of a shared word and one PAUSE). It is measured once, on first
// use, over about a millisecond.
func SpinCost() time.Duration {
	calibrate()
	return time.Duration(spinCal.ns + 0.5)
}

func calibrate() {
	spinCal.once.Do(func() {
		var word atomic.Uint32
		const n = 1 << 15
		best := 0.0
		for round := 0; round < 3; round++ {
			start := time.Now()
			for i := 0; i < n; i++ {
				if word.Load() == 1 {
					break
				}
				relax.Pause(1)
			}
			ns := float64(time.Since(start).Nanoseconds()) / n
			if best == 0 || ns < best {
				best = ns // the least disturbed round
			}
		}
		if best < 0.1 {
			best = 0.1
		}
		spinCal.ns = best
	})
}

// SpinIterations converts a spin duration into a spin threshold for this
// machine, at least 1.
func SpinIterations(d time.Duration) uint32 {
	calibrate()
	n := float64(d.Nanoseconds()) / spinCal.ns
	switch {
	case n < 1:
		return 1
	case n > 1<<31:
		return 1 << 31
	}
	return uint32(n)
}
