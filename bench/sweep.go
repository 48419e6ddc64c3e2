package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/pvlock"
)

// The sweep compares the adaptive waiting policy with fixed settings of its
// two knobs: the spin threshold (polls before a PV waiter halts) and the
// halt-poll window (how long a halted vCPU polls before it sleeps). One
// knob is varied at a time with the other adaptive, and the adaptive
// default is measured beside them, so each cell says whether adaptive
// keeps up with the best fixed choice for that workload, lock and
// overcommit. Every setting runs with the lock's concurrency restriction
// on, and one more, "unrestricted", runs the adaptive policy with it off
// (the lock's -unrestricted variant): the default against every lock of
// its family.
//
// A cell's best fixed setting is the best of a dozen samples, each with
// its own noise, so it is often the luckiest of them rather than the best
// setting (the winner's curse). With SweepSpec.Confirm, each cell ends
// with a confirmation: the adaptive default and that best fixed setting
// run again, alternated, so that adaptive/best is also read from two
// settings measured side by side.

// Adaptive marks a sweep setting left to the adaptive policy.
const Adaptive = -1

// DefaultSweepThresholds are the fixed spin thresholds a sweep tries, in
// polls (2^6 ... 2^16).
var DefaultSweepThresholds = []int{1 << 6, 1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16}

// DefaultSweepHaltPolls are the fixed halt-poll windows a sweep tries.
var DefaultSweepHaltPolls = []time.Duration{0, 10 * time.Microsecond, 50 * time.Microsecond,
	200 * time.Microsecond, time.Millisecond}

// SweepSpec describes a sweep: every workload, lock and overcommit factor
// is measured with the adaptive policy, with each fixed threshold and with
// each fixed halt-poll window.
type SweepSpec struct {
	Workloads  []string
	Locks      []string // PV locks: they must have a WithThreshold constructor
	Factors    []float64
	Thresholds []int           // fixed spin thresholds, polls (> 0)
	HaltPolls  []time.Duration // fixed halt-poll windows (>= 0)
	// Confirm is how many rounds of confirmation end each cell (0: none):
	// in each, the adaptive default and the cell's best fixed setting run
	// once more, in turn, the first of the two alternating between rounds.
	Confirm int
	// Cell is the template of every measurement: CPUs, pinning, runs,
	// duration, warm-up, seed and workload parameters.
	Cell Spec
	// Progress, if set, is called before each cell with its position.
	Progress func(done, total int, label string)
}

// SweepRow is one cell of a sweep: a Row measured with one setting.
// Threshold is the fixed spin threshold in polls or Adaptive; HaltPoll the
// fixed halt-poll window or Adaptive.
type SweepRow struct {
	Row
	Threshold int
	HaltPoll  time.Duration
	// Unrestricted says the row ran with the lock's concurrency
	// restriction off.
	Unrestricted bool
	// Confirm is the row's round of the cell's confirmation, from 1, or 0
	// for a row of the sweep itself.
	Confirm int
}

// sweepJSON is a SweepRow's JSON form: the Row's fields, then threshold
// (a number of polls, or "adaptive") and halt_poll (nanoseconds, or
// "adaptive").
type sweepJSON struct {
	Row
	Threshold any  `json:"threshold"`
	HaltPoll  any  `json:"halt_poll"`
	Restrict  bool `json:"restrict"`
	Confirm   int  `json:"confirm"`
}

// MarshalJSON writes the row with its settings as numbers or "adaptive".
func (r SweepRow) MarshalJSON() ([]byte, error) {
	j := sweepJSON{Row: r.Row, Threshold: "adaptive", HaltPoll: "adaptive", Restrict: !r.Unrestricted, Confirm: r.Confirm}
	if r.Threshold != Adaptive {
		j.Threshold = r.Threshold
	}
	if r.HaltPoll != Adaptive {
		j.HaltPoll = int64(r.HaltPoll)
	}
	return json.Marshal(j)
}

// Setting names the row's setting: "adaptive", "unrestricted",
// "spin=1024" or "haltpoll=200µs".
func (r SweepRow) Setting() string {
	switch {
	case r.Unrestricted:
		return "unrestricted"
	case r.Threshold != Adaptive:
		return fmt.Sprintf("spin=%d", r.Threshold)
	case r.HaltPoll != Adaptive:
		return "haltpoll=" + r.HaltPoll.String()
	}
	return "adaptive"
}

type sweepSetting struct {
	threshold    int
	haltPoll     time.Duration
	unrestricted bool
}

func (s SweepSpec) settings() []sweepSetting {
	out := []sweepSetting{{Adaptive, Adaptive, false}, {Adaptive, Adaptive, true}}
	for _, t := range s.Thresholds {
		out = append(out, sweepSetting{t, Adaptive, false})
	}
	for _, h := range s.HaltPolls {
		out = append(out, sweepSetting{Adaptive, h, false})
	}
	return out
}

// Validate checks the spec without measuring anything.
func (s SweepSpec) Validate() error {
	if len(s.Workloads) == 0 || len(s.Locks) == 0 || len(s.Factors) == 0 {
		return fmt.Errorf("bench: a sweep needs workloads, locks and overcommit factors")
	}
	for _, w := range s.Workloads {
		if _, err := WorkloadByName(w); err != nil {
			return err
		}
	}
	for _, name := range s.Locks {
		k, err := locks.Lookup(name)
		if err != nil {
			return err
		}
		if k.WithThreshold == nil {
			return fmt.Errorf("bench: lock %s has no spin threshold to sweep (PV locks: pv-ticket, pv-qspin, pv-qspin-nosteal)", name)
		}
		if _, err := locks.Lookup(name + locks.Unrestricted); err != nil {
			return fmt.Errorf("bench: lock %s has no %s variant to sweep against", name, locks.Unrestricted)
		}
	}
	for _, t := range s.Thresholds {
		if t <= 0 || t > math.MaxUint32 {
			return fmt.Errorf("bench: spin threshold %d out of range (1..2^32-1)", t)
		}
	}
	for _, h := range s.HaltPolls {
		if h < 0 {
			return fmt.Errorf("bench: halt-poll window %v is negative", h)
		}
	}
	if s.Confirm < 0 {
		return fmt.Errorf("bench: %d rounds of confirmation: want 0 or more", s.Confirm)
	}
	return nil
}

// setHaltPoll changes the halt-poll fields of the policy and no other.
func setHaltPoll(max time.Duration, adaptive bool) {
	p := pvlock.CurrentPolicy()
	p.HaltPoll, p.HaltPollAdaptive = max, adaptive
	pvlock.SetPolicy(p)
}

// Sweep measures every cell of spec. It restores the halt-poll policy it
// found when it returns. Rows come workload by workload, then lock, then
// overcommit, then setting (adaptive first), each cell's confirmation
// rounds last.
func Sweep(ctx context.Context, spec SweepSpec) ([]SweepRow, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	found := pvlock.CurrentPolicy()
	defer setHaltPoll(found.HaltPoll, found.HaltPollAdaptive)
	settings := spec.settings()
	perCell := len(settings) + 2*spec.Confirm
	total := len(spec.Workloads) * len(spec.Locks) * len(spec.Factors) * perCell
	var rows []SweepRow
	for _, wl := range spec.Workloads {
		for _, name := range spec.Locks {
			for _, oc := range spec.Factors {
				measure := func(set sweepSetting, round int) error {
					row := SweepRow{Threshold: set.threshold, HaltPoll: set.haltPoll, Unrestricted: set.unrestricted, Confirm: round}
					label := fmt.Sprintf("%s %s %gx %s", wl, name, oc, row.Setting())
					if round > 0 {
						label += fmt.Sprintf(" (confirmation %d/%d)", round, spec.Confirm)
					}
					if spec.Progress != nil {
						spec.Progress(len(rows), total, label)
					}
					var err error
					if row.Row, err = measureSetting(ctx, spec.Cell, wl, name, oc, set, found); err != nil {
						return fmt.Errorf("sweep %s: %w", label, err)
					}
					rows = append(rows, row)
					return nil
				}
				start := len(rows)
				for _, set := range settings {
					if err := measure(set, 0); err != nil {
						return rows, err
					}
				}
				adaptive, best := settings[0], bestFixed(rows[start:])
				for round := 1; round <= spec.Confirm; round++ {
					pair := [2]sweepSetting{adaptive, best}
					if round%2 == 0 {
						pair[0], pair[1] = best, adaptive
					}
					for _, set := range pair {
						if err := measure(set, round); err != nil {
							return rows, err
						}
					}
				}
			}
		}
	}
	return rows, nil
}

// measureSetting measures one cell of the sweep, workload wl, lock name
// and overcommit oc, with the setting set; found is the halt-poll policy
// that adaptive settings use.
func measureSetting(ctx context.Context, tmpl Spec, wl, name string, oc float64, set sweepSetting, found pvlock.Policy) (Row, error) {
	kind, _ := locks.Lookup(name)
	cell := tmpl
	cell.Workload, cell.Lock, cell.Overcommit = wl, name, oc
	if set.unrestricted {
		u, _ := locks.Lookup(name + locks.Unrestricted)
		cell.NewLock = u.New
	}
	if set.threshold != Adaptive {
		n := uint32(set.threshold)
		cell.NewLock = func() sync.Locker { return kind.WithThreshold(n) }
	}
	if set.haltPoll != Adaptive {
		setHaltPoll(set.haltPoll, false)
	} else {
		setHaltPoll(found.HaltPoll, true)
	}
	return Measure(ctx, cell)
}

// bestFixed returns the setting of the fastest row of one cell's sweep
// that is not the adaptive default.
func bestFixed(cell []SweepRow) sweepSetting {
	var best *SweepRow
	for i := range cell {
		r := &cell[i]
		if r.Setting() != "adaptive" && (best == nil || r.OpsPerSec > best.OpsPerSec) {
			best = r
		}
	}
	return sweepSetting{best.Threshold, best.HaltPoll, best.Unrestricted}
}
