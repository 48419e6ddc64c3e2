package bench

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// LockKind is a lock the lab can measure.
type LockKind struct {
	// Name is the lock's name in tables, JSON and benchmark names.
	Name string
	// Doc is a one-line description.
	Doc string
	// New returns a fresh, unlocked lock.
	New func() sync.Locker
	// WithThreshold, for the PV locks, returns a fresh lock with a fixed
	// spin threshold of n polls instead of the adaptive default (pvbench
	// sweep); nil for locks without one.
	WithThreshold func(n uint32) sync.Locker
}

var locks = map[string]LockKind{}

// RegisterLock adds a lock kind to the lab. It panics on a duplicate name.
func RegisterLock(k LockKind) {
	if _, dup := locks[k.Name]; dup {
		panic("bench: lock " + k.Name + " registered twice")
	}
	locks[k.Name] = k
}

// Lock returns the named lock kind.
func Lock(name string) (LockKind, error) {
	k, ok := locks[name]
	if !ok {
		return LockKind{}, fmt.Errorf("bench: unknown lock %q (known: %v)", name, LockNames())
	}
	return k, nil
}

// LockNames lists the registered lock kinds, sorted.
func LockNames() []string {
	names := make([]string, 0, len(locks))
	for n := range locks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func init() {
	RegisterLock(LockKind{Name: "native-ticket", Doc: "ticket lock, INC=1, pure spinning",
		New: func() sync.Locker { return ticket.New(ticket.Native()) }})
	RegisterLock(LockKind{Name: "pv-ticket", Doc: "PV ticket lock: halt after the spin threshold, directed kick",
		New:           func() sync.Locker { return ticket.New() },
		WithThreshold: func(n uint32) sync.Locker { return ticket.New(ticket.SpinThreshold(n)) }})
	RegisterLock(LockKind{Name: "native-qspin", Doc: "queued spinlock: pending bit, MCS queue, pure spinning",
		New: func() sync.Locker { return qspin.New(qspin.Native()) }})
	RegisterLock(LockKind{Name: "pv-qspin", Doc: "PV queued spinlock: halting queue, hashed head, bounded lock stealing",
		New:           func() sync.Locker { return qspin.New() },
		WithThreshold: func(n uint32) sync.Locker { return qspin.New(qspin.SpinThreshold(n)) }})
	RegisterLock(LockKind{Name: "pv-qspin-nosteal", Doc: "PV queued spinlock without lock stealing (strict FIFO)",
		New:           func() sync.Locker { return qspin.New(qspin.NoStealing()) },
		WithThreshold: func(n uint32) sync.Locker { return qspin.New(qspin.NoStealing(), qspin.SpinThreshold(n)) }})
	RegisterLock(LockKind{Name: "tas", Doc: "test-and-set lock, the kernel's virt_spin_lock: unfair, no queue",
		New: func() sync.Locker { return qspin.NewTAS() }})
	RegisterLock(LockKind{Name: "sync.Mutex", Doc: "Go's sync.Mutex, the lock a Go user would pick",
		New: func() sync.Locker { return new(sync.Mutex) }})
}
