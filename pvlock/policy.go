package pvlock

import (
	"sync"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
	"go.uber.org/atomic"
)

// DefaultSpinThreshold is the number of polls a PV waiter spins before it
// halts: the kernel's SPIN_THRESHOLD (1<<15), chosen there to avoid halts,
// and the wake-up latency they cost, when vCPUs are not overcommitted.
const DefaultSpinThreshold = 1 << 15

// DefaultHaltTimeout bounds a single halt. A waiter whose halt times out
// goes back to spinning, and the lock counts the timeout; a correct PV
// protocol never needs it, so a non-zero count means a lost wake-up or a
// lock held for longer than the timeout.
const DefaultHaltTimeout = time.Second

var (
	pvSpin      = atomic.NewBool(true)
	statsOn     = atomic.NewBool(true)
	haltTimeout = atomic.NewDuration(DefaultHaltTimeout)
)

// SetPVSpin turns the PV slow path of every PV lock on or off at once, like
// the kernel's nopvspin boot option: with it off, PV locks spin without
// ever halting (their lock word layout stays the same). On by default.
func SetPVSpin(on bool) { pvSpin.Store(on) }

// PVSpin reports whether PV locks may halt.
func PVSpin() bool { return pvSpin.Load() }

// SetStats turns the per-acquisition counting of the locks' fast paths on
// or off. On by default. Slow-path events (halts, kicks, halt timeouts,
// lost wake-ups, ...) and the vCPUs' halt/kick counts are always kept: they
// cost nothing next to a wait, and the halt watchdog relies on them.
func SetStats(on bool) { statsOn.Store(on) }

// StatsEnabled reports whether locks count their acquisitions.
func StatsEnabled() bool { return statsOn.Load() }

// SetHaltTimeout sets the watchdog bound of one halt; d <= 0 means halts
// never time out.
func SetHaltTimeout(d time.Duration) { haltTimeout.Store(d) }

// HaltTimeout returns the current halt watchdog bound.
func HaltTimeout() time.Duration { return haltTimeout.Load() }

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
