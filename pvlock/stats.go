package pvlock

import (
	"fmt"
	"sort"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// HistBuckets is the number of buckets of a halt-time histogram, 32. Bucket i
// counts halts that lasted [2^(i-1), 2^i) nanoseconds (bucket 0: under 1ns,
// the last bucket: everything longer), like the kernel's histo_blocked.
const HistBuckets = lockcore.HistBuckets

// LockStats are the statistics of one kind of lock in one mode (for
// example the PV ticket lock), such as ticket.Stats and qspin.Stats
// return. Each vCPU counts in its own padded slot and readers sum the
// slots, so counting costs a lock one uncontended atomic add on a line the
// vCPU owns.
type LockStats lockcore.Stats

func (s *LockStats) core() *lockcore.Stats { return (*lockcore.Stats)(s) }

// AllLockStats returns the statistics of every lock kind and mode created
// so far, in creation order.
func AllLockStats() []*LockStats {
	all := lockcore.All()
	out := make([]*LockStats, len(all))
	for i, s := range all {
		out[i] = (*LockStats)(s)
	}
	return out
}

// Kind returns the lock kind, e.g. "ticket".
func (s *LockStats) Kind() string { return s.core().Kind() }

// Mode returns the lock mode, e.g. "pv".
func (s *LockStats) Mode() string { return s.core().Mode() }

// Name returns the name of the locks counted (ticket.Name, qspin.Name),
// "" for the statistics of the unnamed locks.
func (s *LockStats) Name() string { return s.core().Name() }

// LockNameOverflows returns how many locks were given a name after
// MaxLockNames names of their kind existed: they count with the unnamed
// locks of their kind and mode.
func LockNameOverflows() uint64 { return lockcore.NameOverflows() }

// MaxLockNames is the number of lock names (ticket.Name, qspin.Name) each
// lock kind may use, 64: each has statistics of its own and a label value
// in the metrics.
const MaxLockNames = lockcore.MaxLockNames

// Reset zeroes all counters (the kernel's zero_stats).
func (s *LockStats) Reset() { s.core().Reset() }

// Snapshot is a point-in-time sum of a LockStats over all slots.
type Snapshot struct {
	// Kind, Mode and Name are those of the LockStats, e.g. "ticket", "pv"
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
func (s *LockStats) Snapshot() Snapshot {
	c := s.core()
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
		panic(fmt.Sprintf("pvlock: %s/%s has no event %q (have %v)", s.Kind, s.Mode, event, names))
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
