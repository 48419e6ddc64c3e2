package pvlock

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// HistBuckets is the number of buckets of a halt-time histogram. Bucket i
// counts halts that lasted [2^(i-1), 2^i) nanoseconds (bucket 0: under 1ns,
// the last bucket: everything longer), like the kernel's histo_blocked.
const HistBuckets = 32

// HistBucket returns the histogram bucket of a duration in nanoseconds.
func HistBucket(ns uint64) int {
	b := bits.Len64(ns)
	if b >= HistBuckets {
		b = HistBuckets - 1
	}
	return b
}

// Stripes of slots used by callers that are not vCPUs (and by fast paths
// that do not know which vCPU they run on).
const (
	stripeBits = 4
	stripes    = 1 << stripeBits
)

// slots per chunk of a LockStats; chunks are allocated when first touched.
const chunkSlots = 64

// LockStats counts the events of one kind of lock in one mode (for
// example the PV ticket lock). Each vCPU writes its own padded slot and
// readers sum the slots, so counting costs one uncontended atomic add on a
// line the vCPU owns. Callers that are not vCPUs spread over a few shared
// stripes.
type LockStats struct {
	kind, mode string
	events     []string
	stride     int // uint64 words per slot: events + time + histogram, padded
	chunks     [MaxVCPUs / chunkSlots]atomic.Pointer[[]atomic.Uint64]
	stripe     []atomic.Uint64 // the shared stripes, stripes*stride words
}

var registry struct {
	mu    sync.Mutex
	stats []*LockStats
}

// NewLockStats creates the statistics of a lock kind ("ticket", "qspin")
// in a mode ("pv", "native") with the given event names, and records them
// so that AllLockStats and the Prometheus collector find them. Creating
// the same kind and mode twice returns the first instance if the event
// names match, and panics otherwise.
func NewLockStats(kind, mode string, events []string) *LockStats {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, s := range registry.stats {
		if s.kind == kind && s.mode == mode {
			if fmt.Sprint(s.events) != fmt.Sprint(events) {
				panic(fmt.Sprintf("pvlock: LockStats %s/%s redefined with other events", kind, mode))
			}
			return s
		}
	}
	words := len(events) + 1 + HistBuckets
	stride := (words + 15) &^ 15 // whole 128-byte blocks
	s := &LockStats{kind: kind, mode: mode, events: append([]string(nil), events...), stride: stride,
		stripe: make([]atomic.Uint64, stripes*stride)}
	registry.stats = append(registry.stats, s)
	return s
}

// AllLockStats returns every LockStats created so far, in creation order.
func AllLockStats() []*LockStats {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return append([]*LockStats(nil), registry.stats...)
}

// Kind returns the lock kind, e.g. "ticket".
func (s *LockStats) Kind() string { return s.kind }

// Mode returns the lock mode, e.g. "pv".
func (s *LockStats) Mode() string { return s.mode }

// Events returns the event names, in index order.
func (s *LockStats) Events() []string { return append([]string(nil), s.events...) }

// slotWords returns the counters of a slot: a vCPU's global ID, or any
// negative number for the shared stripes.
func (s *LockStats) slotWords(slot int) []atomic.Uint64 {
	if slot < 0 || slot >= MaxVCPUs {
		off := int(rand.Uint32()%stripes) * s.stride
		return s.stripe[off : off+s.stride]
	}
	c := &s.chunks[slot/chunkSlots]
	words := c.Load()
	if words == nil {
		fresh := make([]atomic.Uint64, chunkSlots*s.stride)
		if !c.CompareAndSwap(nil, &fresh) {
			words = c.Load()
		} else {
			words = &fresh
		}
	}
	off := (slot % chunkSlots) * s.stride
	return (*words)[off : off+s.stride]
}

// Add adds n to event ev in the given slot (a vCPU's ID, or negative).
func (s *LockStats) Add(slot, ev int, n uint64) {
	s.slotWords(slot)[ev].Add(n)
}

// Inc adds one to event ev in the given slot.
func (s *LockStats) Inc(slot, ev int) { s.slotWords(slot)[ev].Add(1) }

// IncHint adds one to event ev in the stripe chosen by hint. Fast paths
// that do not know their vCPU use it with a value that differs between
// consecutive callers (a ticket number, a lock's address), which spreads
// them over the stripes without the cost of a random number.
func (s *LockStats) IncHint(hint uint32, ev int) { s.AddHint(hint, ev, 1) }

// AddHint adds n to event ev in the stripe chosen by hint, as IncHint
// does. Every bit of hint counts: hints that differ only in high bits, or
// that are all even, still land on different stripes.
func (s *LockStats) AddHint(hint uint32, ev int, n uint64) {
	s.stripe[stripeOf(hint)*s.stride+ev].Add(n)
}

// stripeOf maps a hint to a stripe with a multiplicative (Fibonacci) hash,
// whose top bits depend on all bits of the hint.
func stripeOf(hint uint32) int {
	return int((hint * 0x9e3779b9) >> (32 - stripeBits))
}

// StripeHint returns a value for IncHint that is cheap to compute and
// usually differs between goroutines running at the same time: it is
// derived from the address of the caller's stack, which each goroutine
// has to itself.
func StripeHint() uint32 {
	var x byte
	return uint32(uintptr(unsafe.Pointer(&x)) >> 13)
}

// ObserveBlocked records one halt that lasted ns nanoseconds: it adds to
// the total blocked time and to the log2 histogram.
func (s *LockStats) ObserveBlocked(slot int, ns uint64) {
	w := s.slotWords(slot)
	n := len(s.events)
	w[n].Add(ns)
	w[n+1+HistBucket(ns)].Add(1)
}

// Snapshot is a point-in-time sum of a LockStats over all slots.
type Snapshot struct {
	Kind, Mode string
	// Events maps each event name to its count.
	Events map[string]uint64
	// BlockedNanos is the total time waiters spent halted.
	BlockedNanos uint64
	// Blocked is the log2 histogram of halt durations (see HistBucket).
	Blocked [HistBuckets]uint64
}

// Snapshot sums all slots. Counts taken while locks are in use are each
// exact but not mutually consistent, like any scrape of live counters.
func (s *LockStats) Snapshot() Snapshot {
	snap := Snapshot{Kind: s.kind, Mode: s.mode, Events: make(map[string]uint64, len(s.events))}
	n := len(s.events)
	sums := make([]uint64, s.stride)
	add := func(words []atomic.Uint64) {
		for j := range words {
			sums[j%s.stride] += words[j].Load()
		}
	}
	add(s.stripe)
	for i := range s.chunks {
		if words := s.chunks[i].Load(); words != nil {
			add(*words)
		}
	}
	for i, name := range s.events {
		snap.Events[name] = sums[i]
	}
	snap.BlockedNanos = sums[n]
	copy(snap.Blocked[:], sums[n+1:n+1+HistBuckets])
	return snap
}

// Reset zeroes all counters (the kernel's zero_stats).
func (s *LockStats) Reset() {
	for j := range s.stripe {
		s.stripe[j].Store(0)
	}
	for i := range s.chunks {
		if words := s.chunks[i].Load(); words != nil {
			for j := range *words {
				(*words)[j].Store(0)
			}
		}
	}
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
	d := Snapshot{Kind: s.Kind, Mode: s.Mode, Events: make(map[string]uint64, len(s.Events))}
	for k, v := range s.Events {
		d.Events[k] = v - old.Events[k]
	}
	d.BlockedNanos = s.BlockedNanos - old.BlockedNanos
	for i := range d.Blocked {
		d.Blocked[i] = s.Blocked[i] - old.Blocked[i]
	}
	return d
}
