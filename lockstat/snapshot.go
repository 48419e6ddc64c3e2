package lockstat

import (
	"fmt"
	"sort"
)

// Snapshot is a point-in-time sum of a Stats over all slots.
type Snapshot struct {
	// Kind, Mode and Name are those of the Stats, e.g. "ticket", "pv"
	// and "" (the unnamed locks).
	Kind, Mode, Name string
	// Events maps each event name to its count.
	Events map[string]uint64
	// BlockedNanos is the total time waiters spent halted.
	BlockedNanos uint64
	// Blocked is the log2 histogram of halt durations: bucket i counts
	// halts of [2^(i-1), 2^i) nanoseconds.
	Blocked [HistBuckets]uint64
}

// Snapshot sums all slots. Counts taken while locks are in use are each
// exact but not mutually consistent, like any scrape of live counters.
func (s *Stats) Snapshot() Snapshot {
	c := s
	events := c.Events()
	sums := c.Sum()
	snap := Snapshot{Kind: c.Kind(), Mode: c.Mode(), Name: c.Name(), Events: make(map[string]uint64, len(events))}
	for i, name := range events {
		snap.Events[name] = sums[i]
	}
	n := len(events)
	snap.BlockedNanos = sums[n]
	copy(snap.Blocked[:], sums[n+1:])
	return snap
}

// Get returns the named event of a snapshot, panicking on an unknown name
// so that typos in tests and reports fail loudly.
func (s Snapshot) Get(event string) uint64 {
	v, ok := s.Events[event]
	if !ok {
		names := make([]string, 0, len(s.Events))
		for k := range s.Events {
			names = append(names, k)
		}
		sort.Strings(names)
		panic(fmt.Sprintf("lockstat: %s/%s has no event %q (have %v)", s.Kind, s.Mode, event, names))
	}
	return v
}

// Sub returns s - old, event by event: the activity between two snapshots.
func (s Snapshot) Sub(old Snapshot) Snapshot {
	d := Snapshot{Kind: s.Kind, Mode: s.Mode, Name: s.Name, Events: make(map[string]uint64, len(s.Events))}
	for k, v := range s.Events {
		d.Events[k] = v - old.Events[k]
	}
	d.BlockedNanos = s.BlockedNanos - old.BlockedNanos
	for i := range d.Blocked {
		d.Blocked[i] = s.Blocked[i] - old.Blocked[i]
	}
	return d
}
