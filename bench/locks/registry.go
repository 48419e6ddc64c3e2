package locks

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// Kind is a registered lock: everything the lab, the torture and the
// benchmarks need to know about it.
type Kind struct {
	// Name is the lock's name in flags, tables, JSON, torture reports and
	// benchmark names.
	Name string
	// Doc is a one-line description.
	Doc string
	// New returns a fresh, unlocked lock.
	New func() sync.Locker
	// WithThreshold, for the PV locks, returns a fresh lock with a fixed
	// spin threshold of n polls instead of the adaptive default (pvbench
	// sweep); nil for locks without one.
	WithThreshold func(n uint32) sync.Locker
	// Stats returns the cumulative halt-watchdog timeouts and lost
	// wake-ups of all locks of this kind (the halt_timeouts and
	// lost_wakeups events of the lock statistics, see StatsCounters). Nil
	// for locks that never halt or keep no such counts.
	Stats func() (timeouts, lostWakeups uint64)
	// Passive returns the cumulative passive waits of all locks of this
	// kind (the passive_waits event: waits outside the saturated lock,
	// see pvlock.Policy.Restrict). Nil for locks without a gate.
	Passive func() uint64
	// Unfair says the lock makes no promise against starvation (a
	// test-and-set lock, say): the torture reports starved waits, but
	// only stalls fail the run.
	Unfair bool
	// FIFOSpin says the lock's waiters spin in line without ever halting
	// or blocking, so that under overcommit the lock is handed to
	// descheduled waiters and throughput collapses (lock-waiter
	// preemption). The torture gives such locks its shortest runs; the
	// goroutine benchmarks leave them out of their contended shapes.
	FIFOSpin bool
	// TortureOnly keeps a variant that only the torture needs (a short
	// spin threshold, a test's lock) out of the lab's lists (Names): the
	// main job's default -locks and the benchmarks stay as they were.
	TortureOnly bool
	// Variant keeps a variant of a lab lock (one with its concurrency
	// restriction off, say) out of the main job's default -locks: -locks
	// names it to run it side by side with the lock it varies.
	Variant bool
	// NoTorture, if set, says why the torture cannot run the lock; every
	// lock without it can be tortured (see TortureNames).
	NoTorture string
	// RW says the lock has a shared read side: New returns an RWLocker
	// (Register checks), and readers hold it together. Read-mostly
	// workloads and the torture's rw mode read-lock it with RLock; they
	// take any other lock exclusively for reads too (ReadSide).
	RW bool
}

// RWLocker is a reader-writer lock, as sync.RWMutex and qspin.RWLock are:
// Lock and Unlock for a writer, RLock and RUnlock for readers, who hold it
// together.
type RWLocker interface {
	sync.Locker
	RLock()
	RUnlock()
}

// ReadSide returns l as an RWLocker: l itself if it has a read side (or
// wraps a lock that has one, exposing it as Inner, as the lab's probe
// does), else l with RLock and RUnlock taking it exclusively, so that a
// read-mostly workload runs on every lock.
func ReadSide(l sync.Locker) RWLocker {
	if rw, ok := l.(RWLocker); ok {
		return rw
	}
	if w, ok := l.(interface{ Inner() sync.Locker }); ok {
		if rw, ok := w.Inner().(RWLocker); ok {
			return rw
		}
	}
	return exclusive{l}
}

// exclusive is a lock without a read side seen as an RWLocker: readers
// take it exclusively.
type exclusive struct{ sync.Locker }

// RLock locks the lock exclusively.
func (e exclusive) RLock() { e.Lock() }

// RUnlock unlocks it.
func (e exclusive) RUnlock() { e.Unlock() }

var registry struct {
	mu    sync.Mutex
	kinds map[string]Kind
}

// Register adds a lock kind. It panics on an empty or duplicate name or
// a nil constructor, so that a mistaken registration fails at start-up.
func Register(k Kind) {
	if k.Name == "" || k.New == nil {
		panic("locks: Register needs a name and a constructor")
	}
	if _, ok := k.New().(RWLocker); k.RW && !ok {
		panic("locks: lock " + k.Name + " is registered as RW, but has no RLock and RUnlock")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.kinds[k.Name]; dup {
		panic("locks: lock " + k.Name + " registered twice")
	}
	if registry.kinds == nil {
		registry.kinds = map[string]Kind{}
	}
	registry.kinds[k.Name] = k
}

// Get returns the named lock kind, whatever it is registered for.
func Get(name string) (Kind, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	k, ok := registry.kinds[name]
	return k, ok
}

// Lookup returns the named lab lock (one of Names).
func Lookup(name string) (Kind, error) {
	k, ok := Get(name)
	if !ok || k.TortureOnly {
		return Kind{}, fmt.Errorf("bench: unknown lock %q (known: %v)", name, AllNames())
	}
	return k, nil
}

// Names lists the lab's default locks, sorted: every registered kind but
// the TortureOnly ones and the Variants.
func Names() []string {
	return names(func(k Kind) bool { return !k.TortureOnly && !k.Variant })
}

// AllNames lists every lock the lab can run, sorted: Names and the
// Variants.
func AllNames() []string {
	return names(func(k Kind) bool { return !k.TortureOnly })
}

// TortureNames lists the locks the torture can run, sorted: every
// registered kind without a NoTorture reason.
func TortureNames() []string {
	return names(func(k Kind) bool { return k.NoTorture == "" })
}

func names(keep func(Kind) bool) []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(registry.kinds)) {
		if keep(registry.kinds[name]) {
			out = append(out, name)
		}
	}
	return out
}

// Event names a lock's statistics must have for StatsCounters.
const (
	HaltTimeouts = "halt_timeouts"
	LostWakeups  = "lost_wakeups"
)

// StatsCounters returns a Kind.Stats function reading the halt_timeouts
// and lost_wakeups events of s. It panics if s lacks either event, so a
// mistaken registration fails at start-up.
func StatsCounters(s *lockstat.Stats) func() (timeouts, lostWakeups uint64) {
	snap := s.Snapshot()
	snap.Get(HaltTimeouts)
	snap.Get(LostWakeups)
	return func() (uint64, uint64) {
		snap := s.Snapshot()
		return snap.Get(HaltTimeouts), snap.Get(LostWakeups)
	}
}

// Unrestricted is the suffix of the PV locks' variants with concurrency
// restriction off (ticket.NoRestriction, qspin.NoRestriction).
const Unrestricted = "-unrestricted"

// PassiveCounter returns a Kind.Passive function reading the
// passive_waits event of s.
func PassiveCounter(s *lockstat.Stats) func() uint64 {
	return func() uint64 { return s.Snapshot().Get(PassiveWaits) }
}

// PassiveWaits is the event PassiveCounter reads.
const PassiveWaits = "passive_waits"

// ShortVariantThreshold is the spin threshold of the torture's -short
// variants: so few polls that nearly every contended acquisition goes
// through the halt and kick path. (lockcore.ShortSpin, the same number, is
// another fact: the spin of a goroutine waiting for a lock with stealing.)
const ShortVariantThreshold = 64

// nativeKind is the Kind of a native spinlock made by newLock, counting in
// st: a FIFO spinner.
func nativeKind(name, doc string, st *lockstat.Stats, newLock func() sync.Locker) Kind {
	return Kind{Name: name, Doc: doc, FIFOSpin: true, New: newLock, Stats: StatsCounters(st)}
}

// pvKind is the Kind of a PV lock that newLock makes with opts, counting
// in st: its fixed-threshold twin adds threshold(n) to opts, and the
// passive waiters of its gate are counted.
func pvKind[O any, L sync.Locker](name, doc string, st *lockstat.Stats, newLock func(...O) L, threshold func(uint32) O, opts ...O) Kind {
	return Kind{Name: name, Doc: doc,
		New:           func() sync.Locker { return newLock(opts...) },
		WithThreshold: func(n uint32) sync.Locker { return newLock(append(slices.Clip(opts), threshold(n))...) },
		Stats:         StatsCounters(st), Passive: PassiveCounter(st)}
}

// shortKind is the torture's -short variant of k: k with a spin threshold
// of ShortVariantThreshold polls.
func shortKind(k Kind, name, doc string) Kind {
	short := k.WithThreshold
	k.Name, k.Doc, k.TortureOnly, k.WithThreshold = name, doc, true, nil
	k.New = func() sync.Locker { return short(ShortVariantThreshold) }
	return k
}

// unrestrictedKind is the Kind of pvKind(name, ..., st, newLock,
// threshold, opts) with its concurrency restriction off, a Variant named
// name+Unrestricted: noRestriction is the lock package's NoRestriction.
func unrestrictedKind[O any, L sync.Locker](name string, st *lockstat.Stats, newLock func(...O) L, threshold func(uint32) O, noRestriction O, opts ...O) Kind {
	k := pvKind(name+Unrestricted, name+" with its concurrency restriction off: every waiter waits in the lock",
		st, newLock, threshold, append(slices.Clip(opts), noRestriction)...)
	k.Variant = true
	return k
}

func init() {
	Register(nativeKind("native-ticket", "ticket lock, INC=1, pure spinning", ticket.Stats(ticket.ModeNative),
		func() sync.Locker { return ticket.New(ticket.Native()) }))
	pvTicket := pvKind("pv-ticket", "PV ticket lock: halt after the spin threshold, directed kick",
		ticket.Stats(ticket.ModePV), ticket.New, ticket.SpinThreshold)
	Register(pvTicket)
	Register(shortKind(pvTicket, "pv-ticket-short", "PV ticket lock with a spin threshold of ShortVariantThreshold polls"))
	Register(nativeKind("native-qspin", "queued spinlock: pending bit, MCS queue, pure spinning", qspin.Stats(qspin.ModeNative),
		func() sync.Locker { return qspin.New(qspin.Native()) }))
	pvQspin := pvKind("pv-qspin", "PV queued spinlock: halting queue, hashed head, bounded lock stealing until the head starves",
		qspin.Stats(qspin.ModePV), qspin.New, qspin.SpinThreshold)
	Register(pvQspin)
	pvNoSteal := pvKind("pv-qspin-nosteal", "PV queued spinlock without lock stealing (strict FIFO)",
		qspin.Stats(qspin.ModePVNoSteal), qspin.New, qspin.SpinThreshold, qspin.NoStealing())
	Register(pvNoSteal)
	Register(shortKind(pvQspin, "pv-qspin-short", "PV queued spinlock with a spin threshold of ShortVariantThreshold polls"))
	Register(unrestrictedKind("pv-ticket", ticket.Stats(ticket.ModePV), ticket.New, ticket.SpinThreshold, ticket.NoRestriction()))
	Register(unrestrictedKind("pv-qspin", qspin.Stats(qspin.ModePV), qspin.New, qspin.SpinThreshold, qspin.NoRestriction()))
	Register(unrestrictedKind("pv-qspin-nosteal", qspin.Stats(qspin.ModePVNoSteal), qspin.New, qspin.SpinThreshold, qspin.NoRestriction(), qspin.NoStealing()))
	Register(Kind{Name: "tas", Doc: "test-and-set lock, the kernel's virt_spin_lock: unfair, no queue", Unfair: true,
		New:   func() sync.Locker { return qspin.NewTAS() },
		Stats: StatsCounters(qspin.Stats(qspin.ModeTAS))})
	Register(Kind{Name: "sync.Mutex", Doc: "Go's sync.Mutex, the lock a Go user would pick",
		New: func() sync.Locker { return new(sync.Mutex) }})
	// The reader-writer locks are Variants: the exclusive workloads would
	// only measure their write side, so they run when -locks names them
	// (rwloop's default does).
	Register(Kind{Name: "sync.RWMutex", Doc: "Go's sync.RWMutex, the reader-writer lock a Go user would pick",
		RW: true, Variant: true, New: func() sync.Locker { return new(sync.RWMutex) }})
	for _, v := range []struct {
		name, doc string
		mode      qspin.Mode
		opts      []qspin.Option
	}{
		{"native-rwlock", "queued reader-writer lock (qrwlock) on a native qspin wait lock: pure spinning", qspin.ModeNative, []qspin.Option{qspin.Native()}},
		{"pv-rwlock", "PV queued reader-writer lock (qrwlock): PV qspin wait lock, halting queue head", qspin.ModePV, nil},
	} {
		Register(Kind{Name: v.name, Doc: v.doc, RW: true, Variant: true, FIFOSpin: v.mode == qspin.ModeNative,
			New:   func() sync.Locker { return qspin.NewRW(v.opts...) },
			Stats: rwStats(v.mode), Passive: PassiveCounter(qspin.Stats(v.mode))})
	}
	Register(Kind{Name: "pv-rwlock-short", Doc: "PV reader-writer lock with a spin threshold of ShortVariantThreshold polls", TortureOnly: true, RW: true,
		New:   func() sync.Locker { return qspin.NewRW(qspin.SpinThreshold(ShortVariantThreshold)) },
		Stats: rwStats(qspin.ModePV), Passive: PassiveCounter(qspin.Stats(qspin.ModePV))})
}

// rwStats is the Kind.Stats of the RWLocks of mode m: the halt timeouts
// and lost wake-ups of their queue heads (qspin.RWStats) and of their
// wait locks, which are qspin Locks of the same mode (qspin.Stats).
func rwStats(m qspin.Mode) func() (timeouts, lostWakeups uint64) {
	head, queue := StatsCounters(qspin.RWStats(m)), StatsCounters(qspin.Stats(m))
	return func() (uint64, uint64) {
		t1, l1 := head()
		t2, l2 := queue()
		return t1 + t2, l1 + l2
	}
}
