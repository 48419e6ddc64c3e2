package lockstat

import (
	"fmt"
	"math/bits"
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

// Slots is the number of per-vCPU slots of a Stats, the largest number of
// vCPUs that may exist at once (pvlock.Slots). Slot numbers outside
// [0, Slots) count in the shared stripes.
const Slots = 4096

// slots per chunk of a Stats; chunks are allocated when first touched.
const chunkSlots = 64

// Stats are the statistics of one kind of lock in one mode (for example
// the PV ticket lock), such as ticket.Stats and qspin.Stats return. Locks
// count into it (Inc, Add, AddHint, ObserveBlocked); readers take a
// Snapshot. Each vCPU writes its own padded slot and readers sum the
// slots, so counting costs one uncontended atomic add on a line the vCPU
// owns. Callers that are not vCPUs spread over a few shared stripes.
type Stats struct {
	kind, mode string
	name       string // the locks' name (NameStats); "" for the unnamed
	events     []string
	stride     int // uint64 words per slot: events + time + histogram, padded
	chunks     [Slots / chunkSlots]atomic.Pointer[[]atomic.Uint64]
	stripe     []atomic.Uint64 // the shared stripes, stripes*stride words
}

var registry struct {
	mu    sync.Mutex
	stats []*Stats
}

// New creates the statistics of a lock kind ("ticket", "qspin") in a mode
// ("pv", "native") with the given event names, and records them so that
// All (and so the Prometheus collector) finds them. Creating the same kind
// and mode twice returns the first instance if the event names match, and
// panics otherwise.
func New(kind, mode string, events []string) *Stats {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return newStats(kind, mode, "", events)
}

// newStats is New for locks named name; registry.mu is held.
func newStats(kind, mode, name string, events []string) *Stats {
	for _, s := range registry.stats {
		if s.kind == kind && s.mode == mode && s.name == name {
			if fmt.Sprint(s.events) != fmt.Sprint(events) {
				panic(fmt.Sprintf("lockstat: Stats %s/%s redefined with other events", kind, mode))
			}
			return s
		}
	}
	words := len(events) + 1 + HistBuckets
	stride := (words + 15) &^ 15 // whole 128-byte blocks
	s := &Stats{kind: kind, mode: mode, name: name, events: append([]string(nil), events...), stride: stride,
		stripe: make([]atomic.Uint64, stripes*stride)}
	registry.stats = append(registry.stats, s)
	return s
}

// MaxLockNames bounds the lock names a process may use (ticket.Name,
// qspin.Name): each name of a lock kind has statistics of its own in
// every mode, and a label value in the metrics, so names must come from a
// small fixed set ("orders", "sessions"), never from data. Locks given a
// name once MaxLockNames names of their kind exist count with the unnamed
// locks, and NameOverflows counts them.
const MaxLockNames = 64

// Named is the statistics of the locks of one kind that share a name, one
// Stats per mode.
type Named struct {
	modes []*Stats
}

// Mode returns the statistics of the named locks of mode m.
func (n *Named) Mode(m int) *Stats { return n.modes[m] }

var (
	namedSets     = map[[2]string]*Named{} // by kind and name; registry.mu
	nameOverflows atomic.Uint64
)

// NameStats returns the statistics of the locks named name whose unnamed
// statistics are base, one per mode (base[m] is mode m's, as in a lock
// package's table): what the lock packages' Name option gives a lock.
// Every lock of the kind with that name shares them, apart from the
// unnamed locks', and the Prometheus metrics label them name=name. It
// returns nil for the empty name, which is no name, and nil, counting the
// lock in NameOverflows, once MaxLockNames names of the kind exist: names
// come from a small fixed set.
func NameStats(base []*Stats, name string) *Named {
	if name == "" {
		return nil
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	kind := base[0].kind
	key := [2]string{kind, name}
	if n := namedSets[key]; n != nil {
		return n
	}
	names := 0
	for k := range namedSets {
		if k[0] == kind {
			names++
		}
	}
	if names >= MaxLockNames {
		nameOverflows.Add(1)
		return nil
	}
	n := &Named{modes: make([]*Stats, len(base))}
	for m, b := range base {
		n.modes[m] = newStats(b.kind, b.mode, name, b.events)
	}
	namedSets[key] = n
	return n
}

// NameOverflows returns how many locks were given a name after
// MaxLockNames names of their kind existed, and count with the unnamed.
func NameOverflows() uint64 { return nameOverflows.Load() }

// All returns the statistics of every lock kind, mode and name created so
// far, in creation order.
func All() []*Stats {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return append([]*Stats(nil), registry.stats...)
}

// Kind returns the lock kind, e.g. "ticket".
func (s *Stats) Kind() string { return s.kind }

// Mode returns the lock mode, e.g. "pv".
func (s *Stats) Mode() string { return s.mode }

// Name returns the name of the locks counted, "" for the unnamed ones.
func (s *Stats) Name() string { return s.name }

// Events returns the event names, in index order.
func (s *Stats) Events() []string { return append([]string(nil), s.events...) }

// slotWords returns the counters of a slot: a vCPU's global ID, or any
// negative number for the shared stripes.
func (s *Stats) slotWords(slot int) []atomic.Uint64 {
	if slot < 0 || slot >= Slots {
		// The caller's stack picks the stripe: goroutines counting at the
		// same time use different stripes, and a goroutine keeps its own,
		// for the cost of an address, not of a random number.
		off := stripeOf(StripeHint()) * s.stride
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
func (s *Stats) Add(slot, ev int, n uint64) {
	s.slotWords(slot)[ev].Add(n)
}

// Inc adds one to event ev in the given slot.
func (s *Stats) Inc(slot, ev int) { s.slotWords(slot)[ev].Add(1) }

// IncHint adds one to event ev in the stripe chosen by hint. Fast paths
// that do not know their vCPU use it with a value that differs between
// consecutive callers (a ticket number, a lock's address), which spreads
// them over the stripes without the cost of a random number.
func (s *Stats) IncHint(hint uint32, ev int) { s.AddHint(hint, ev, 1) }

// AddHint adds n to event ev in the stripe chosen by hint, as IncHint
// does. Every bit of hint counts: hints that differ only in high bits, or
// that are all even, still land on different stripes.
func (s *Stats) AddHint(hint uint32, ev int, n uint64) {
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
func (s *Stats) ObserveBlocked(slot int, ns uint64) {
	w := s.slotWords(slot)
	n := len(s.events)
	w[n].Add(ns)
	w[n+1+HistBucket(ns)].Add(1)
}

// Sum adds up all slots. Its result holds one count per event, in index
// order, then the total blocked time in nanoseconds, then the HistBuckets
// buckets of the halt-time histogram. Counts taken while locks are in use
// are each exact but not mutually consistent, like any scrape of live
// counters.
func (s *Stats) Sum() []uint64 {
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
	return sums[:len(s.events)+1+HistBuckets]
}

// Reset zeroes all counters (the kernel's zero_stats).
func (s *Stats) Reset() {
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
