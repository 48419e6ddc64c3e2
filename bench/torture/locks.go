package torture

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// Lock is a lock kind the torture can run.
type Lock struct {
	// Name identifies the lock in flags and reports.
	Name string
	// New returns a fresh, unlocked lock.
	New func() sync.Locker
	// Stats returns the cumulative halt-watchdog timeouts and lost
	// wake-ups of all locks of this kind (the halt_timeouts and
	// lost_wakeups events of the lock statistics). Nil for locks that
	// never halt or keep no such counts.
	Stats func() (timeouts, lostWakeups uint64)
	// Unfair says the lock makes no promise against starvation (a
	// test-and-set lock, say): starved waits are reported, but only
	// stalls fail the run.
	Unfair bool
}

// LockOption qualifies a lock at registration.
type LockOption func(*Lock)

// Unfair marks a lock that may starve a waiter by design (see Lock.Unfair).
func Unfair() LockOption { return func(l *Lock) { l.Unfair = true } }

var registry struct {
	mu    sync.Mutex
	locks map[string]Lock
}

// RegisterLock adds a lock kind to the torture under name. stats may be
// nil (see Lock.Stats); LockStatsCounters adapts a lock's pvlock
// statistics. RegisterLock panics on an empty or duplicate name or a nil
// newLock. A PV queued lock, say, plugs in with one line in an init
// function:
//
//	torture.RegisterLock("pv-qspin", func() sync.Locker { return qspin.New() },
//		torture.LockStatsCounters(qspin.Stats(qspin.ModePV)))
func RegisterLock(name string, newLock func() sync.Locker, stats func() (timeouts, lostWakeups uint64), opts ...LockOption) {
	if name == "" || newLock == nil {
		panic("torture: RegisterLock needs a name and a constructor")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.locks[name]; dup {
		panic("torture: lock " + name + " registered twice")
	}
	if registry.locks == nil {
		registry.locks = map[string]Lock{}
	}
	lk := Lock{Name: name, New: newLock, Stats: stats}
	for _, o := range opts {
		o(&lk)
	}
	registry.locks[name] = lk
}

// LookupLock returns the registered lock kind called name.
func LookupLock(name string) (Lock, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	lk, ok := registry.locks[name]
	if !ok {
		return Lock{}, fmt.Errorf("torture: unknown lock %q (known: %v)", name, lockNamesLocked())
	}
	return lk, nil
}

// LockNames lists the registered lock kinds, sorted.
func LockNames() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return lockNamesLocked()
}

func lockNamesLocked() []string {
	names := make([]string, 0, len(registry.locks))
	for n := range registry.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Event names a lock's statistics must have for LockStatsCounters.
const (
	HaltTimeouts = "halt_timeouts"
	LostWakeups  = "lost_wakeups"
)

// LockStatsCounters returns a Lock.Stats function reading the
// halt_timeouts and lost_wakeups events of s. It panics if s lacks either
// event, so a mistaken registration fails at start-up.
func LockStatsCounters(s *pvlock.LockStats) func() (timeouts, lostWakeups uint64) {
	snap := s.Snapshot()
	snap.Get(HaltTimeouts)
	snap.Get(LostWakeups)
	return func() (uint64, uint64) {
		snap := s.Snapshot()
		return snap.Get(HaltTimeouts), snap.Get(LostWakeups)
	}
}

// ShortSpin is the spin threshold of the pv-ticket-short variant: so few
// polls that nearly every contended acquisition goes through the halt
// and kick path.
const ShortSpin = 64

func init() {
	RegisterLock("native-ticket", func() sync.Locker { return ticket.New(ticket.Native()) },
		LockStatsCounters(ticket.Stats(ticket.ModeNative)))
	RegisterLock("pv-ticket", func() sync.Locker { return ticket.New() },
		LockStatsCounters(ticket.Stats(ticket.ModePV)))
	RegisterLock("pv-ticket-short", func() sync.Locker { return ticket.New(ticket.SpinThreshold(ShortSpin)) },
		LockStatsCounters(ticket.Stats(ticket.ModePV)))
	RegisterLock("native-qspin", func() sync.Locker { return qspin.New(qspin.Native()) },
		LockStatsCounters(qspin.Stats(qspin.ModeNative)))
	RegisterLock("pv-qspin", func() sync.Locker { return qspin.New() },
		LockStatsCounters(qspin.Stats(qspin.ModePV)))
	RegisterLock("pv-qspin-nosteal", func() sync.Locker { return qspin.New(qspin.NoStealing()) },
		LockStatsCounters(qspin.Stats(qspin.ModePVNoSteal)))
	RegisterLock("pv-qspin-short", func() sync.Locker { return qspin.New(qspin.SpinThreshold(ShortSpin)) },
		LockStatsCounters(qspin.Stats(qspin.ModePV)))
	RegisterLock("tas", func() sync.Locker { return qspin.NewTAS() },
		LockStatsCounters(qspin.Stats(qspin.ModeTAS)), Unfair())
	RegisterLock("sync.Mutex", func() sync.Locker { return new(sync.Mutex) }, nil)
}
