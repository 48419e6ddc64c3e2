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
}

// sweepJSON is a SweepRow's JSON form: the Row's fields, then threshold
// (a number of polls, or "adaptive") and halt_poll (nanoseconds, or
// "adaptive").
type sweepJSON struct {
	Row
	Threshold any  `json:"threshold"`
	HaltPoll  any  `json:"halt_poll"`
	Restrict  bool `json:"restrict"`
}

// MarshalJSON writes the row with its settings as numbers or "adaptive".
func (r SweepRow) MarshalJSON() ([]byte, error) {
	j := sweepJSON{Row: r.Row, Threshold: "adaptive", HaltPoll: "adaptive", Restrict: !r.Unrestricted}
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
// overcommit, then setting (adaptive first).
func Sweep(ctx context.Context, spec SweepSpec) ([]SweepRow, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	found := pvlock.CurrentPolicy()
	defer setHaltPoll(found.HaltPoll, found.HaltPollAdaptive)
	settings := spec.settings()
	total := len(spec.Workloads) * len(spec.Locks) * len(spec.Factors) * len(settings)
	var rows []SweepRow
	for _, wl := range spec.Workloads {
		for _, name := range spec.Locks {
			kind, _ := locks.Lookup(name)
			for _, oc := range spec.Factors {
				for _, set := range settings {
					cell := spec.Cell
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
					row := SweepRow{Threshold: set.threshold, HaltPoll: set.haltPoll, Unrestricted: set.unrestricted}
					if spec.Progress != nil {
						spec.Progress(len(rows), total, fmt.Sprintf("%s %s %gx %s", wl, name, oc, row.Setting()))
					}
					var err error
					if row.Row, err = Measure(ctx, cell); err != nil {
						return rows, fmt.Errorf("sweep %s %s %gx %s: %w", wl, name, oc, row.Setting(), err)
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows, nil
}
