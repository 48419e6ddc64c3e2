package locks

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/lockstat"
)

// PLEYield is a native ticket lock whose waiters emulate the hardware's
// pause-loop exit (Intel PLE, AMD pause filter): a waiter that has polled
// the lock for a PLE window "exits to the hypervisor", which here means
// sched_yield(2), and then spins for another window. It stands for the
// PV ticketlock thread's "default, ple_on" configuration: a guest with
// plain ticket locks on a host that detects spinning vCPUs.
//
// It is an approximation. KVM's PLE handler does a directed yield_to()
// to a chosen vCPU of the same VM (preferably a preempted one); user space
// has no yield_to, and sched_yield only lets the scheduler pick another
// runnable thread of the CPU, which may or may not be the vCPU the lock
// waits for. The window is a fixed time, not KVM's grow/shrink window.
//
// The zero value is an unlocked lock with the default window.
type PLEYield struct {
	_    lockcore.NoCopy
	tail atomic.Uint32 // next ticket to hand out
	head atomic.Uint32 // ticket being served
	// Window is the spin time before each yield; 0 means DefaultPLEWindow.
	// Set it before first use.
	Window time.Duration
	spins  atomic.Uint32 // Window in polls, computed on first slow path
}

// DefaultPLEWindow is the spin time after which a PLEYield waiter yields:
// about KVM's default ple_window of 4096 cycles at 2 GHz.
const DefaultPLEWindow = 2 * time.Microsecond

// Event indexes of the ple-yield statistics.
const (
	pleAcquiredFast = iota
	pleAcquiredSlow
	pleYields
)

var pleStats = lockstat.New("ple-yield", "native", []string{"acquired_fast", "acquired_slow", "yields"})

// PLEYieldStats returns the statistics of all PLEYield locks: acquisitions
// with and without waiting, and yields (emulated pause-loop exits).
func PLEYieldStats() *lockstat.Stats { return (*lockstat.Stats)(pleStats) }

// Lock takes a ticket and waits for it, yielding the CPU after every
// window of polls.
func (l *PLEYield) Lock() {
	t := l.tail.Add(1) - 1
	if l.head.Load() == t {
		if lockcore.StatsOn.Load() {
			pleStats.IncHint(t, pleAcquiredFast)
		}
		return
	}
	window := l.window()
	for {
		for i := window; i > 0; i-- {
			if l.head.Load() == t {
				if lockcore.StatsOn.Load() {
					pleStats.IncHint(t, pleAcquiredSlow)
				}
				return
			}
			relax.Pause(1)
		}
		if lockcore.StatsOn.Load() {
			pleStats.IncHint(t, pleYields)
		}
		relax.Yield() // the pause-loop exit
	}
}

// Unlock serves the next ticket. Unlocking an unlocked lock panics.
func (l *PLEYield) Unlock() {
	h := l.head.Load()
	if h == l.tail.Load() {
		panic("bench: unlock of unlocked PLEYield")
	}
	l.head.Store(h + 1) // only the holder writes head
}

func (l *PLEYield) window() uint32 {
	if n := l.spins.Load(); n != 0 {
		return n
	}
	d := l.Window
	if d <= 0 {
		d = DefaultPLEWindow
	}
	n := lockcore.SpinIterations(d)
	l.spins.Store(n)
	return n
}

func init() {
	Register(Kind{Name: "ple-yield", FIFOSpin: true,
		Doc: "native ticket lock + emulated pause-loop exit: sched_yield after a 2µs spin window",
		New: func() sync.Locker { return new(PLEYield) }})
}
