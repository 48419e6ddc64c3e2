package lockcore

import (
	"fmt"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// NoCopy makes go vet's copylocks check flag copies of a struct that has
// it as a field (a lock: `_ lockcore.NoCopy`). It takes no space.
type NoCopy struct{}

// Lock is a no-op that makes NoCopy a sync.Locker for go vet.
func (*NoCopy) Lock() {}

// Unlock is a no-op that makes NoCopy a sync.Locker for go vet.
func (*NoCopy) Unlock() {}

// New returns a new zero L configured by opts, in order: a lock package's
// New.
func New[L any, O ~func(*L)](opts []O) *L {
	l := new(L)
	for _, o := range opts {
		o(l)
	}
	return l
}

// NameStats is the body of a lock package's Name option. Called with the
// option, it panics, with the package name pkg as the prefix, if name is
// not valid UTF-8, which no metric label may hold. It returns what the
// option does when applied: look up the statistics of the locks named name
// among base, the package's unnamed statistics by mode
// (lockstat.NameStats).
func NameStats(pkg string, base []*lockstat.Stats, name string) func() *lockstat.Named {
	if !utf8.ValidString(name) {
		panic(fmt.Sprintf("%s: lock name %q is not valid UTF-8", pkg, name))
	}
	return func() *lockstat.Named { return lockstat.NameStats(base, name) }
}

// Key returns the identity of the lock l in the halt/kick tables and the
// stripe hint of its statistics. A lock shared between goroutines has
// escaped to the heap, and Go's heap objects do not move, so its address
// is a stable key.
func Key[L any](l *L) uintptr { return uintptr(unsafe.Pointer(l)) }

// Spin is a lock's spin threshold, as its SpinThreshold and SpinDuration
// options set it. The zero Spin is the default threshold with the
// adaptive waiting policy (see Spinner).
type Spin struct {
	threshold uint32 // polls before a PV halt; 0 means the default
}

// SetThreshold sets the threshold to n polls; 0 restores the default.
func (s *Spin) SetThreshold(n uint32) { s.threshold = n }

// SetDuration sets the threshold as a time, converted to polls with this
// machine's measured cost of one poll (SpinIterations).
func (s *Spin) SetDuration(d time.Duration) { s.threshold = SpinIterations(d) }

// Fixed reports whether the threshold was set (SetThreshold,
// SetDuration): waiters then spin for all of it, whatever their load.
func (s Spin) Fixed() bool { return s.threshold != 0 }

// Threshold returns the threshold in polls.
func (s Spin) Threshold() uint32 {
	if s.threshold != 0 {
		return s.threshold
	}
	return DefaultSpinThreshold
}

// Spinner starts a PV spin phase of the calling waiter. A fixed threshold,
// or a waiter that cannot halt, spins the whole threshold. Otherwise a
// lock whose waiters may be overtaken (steals) spins briefly: ShortSpin,
// or on a vCPU that shares its CPU its steal spin (Spinner.stealSpin). Its
// waiters may halt early, since running lockers take the lock meanwhile.
// A lock without stealing spins for the default threshold. Either gives
// way early to a runnable sibling vCPU (see Spinner).
func (s Spin) Spinner(canHalt, steals bool) Spinner {
	switch {
	case s.threshold != 0 || !canHalt:
		return NewSpinner(s.Threshold(), true)
	case steals:
		sp := NewSpinner(ShortSpin, false)
		sp.stealSpin()
		return sp
	}
	return NewSpinner(DefaultSpinThreshold, false)
}

// Pause is one iteration's pause of a spin loop that may run long (i
// counts its iterations from 1): a CPU relax, and every SpinPollEvery
// iterations an acknowledgement of cross-vCPU calls (PollCurrent), so that
// a vCPU spinning there never holds up a pvlock.Shootdown. That call is
// also the loop's preemption point: relax.Pause is assembly, which the
// runtime cannot preempt asynchronously, so a loop of bare pauses holds
// its P (and a stop-the-world) until a signal happens to land between two
// pauses.
func Pause(i uint32) {
	if i%SpinPollEvery == 0 {
		PollCurrent()
		CheckSpin()
	}
	relax.Pause(1)
}

// HaltEvents are the indexes, in a lock's Stats, of the events Halt counts.
type HaltEvents struct {
	Timeouts    int // halts ended by the watchdog
	LostWakeups int // of those, halts whose turn had come
}

// Halt halts w until it is kicked, wakes spuriously or the halt watchdog
// (HaltTimeout) expires, and records the halt in st: its duration goes to
// the blocked-time histogram and, if the watchdog ended it, ev.Timeouts is
// counted. The caller counts the halt itself, and whatever else its
// protocol makes of the result.
//
// A timed-out halt whose turn has come (served reports true) is not yet a
// lost wake-up: its kicker may sit between the hand-over and the kick,
// preempted there by the host. w is still published, so that kick still
// comes; Halt waits one more watchdog period for it and returns Kicked if
// it lands. Only a turn that no kick follows within that period counts as
// ev.LostWakeups.
func Halt(st *Stats, w *kick.Waiter, ev HaltEvents, served func() bool) kick.Result {
	slot := w.Slot
	start := time.Now()
	timeout := time.Duration(HaltTimeout.Load())
	res := haltWatched(w, timeout) // w.Halt(timeout), checked for lockups
	if res == kick.TimedOut {
		st.Inc(slot, ev.Timeouts)
		if served() {
			if awaitKick(w, timeout) {
				res = kick.Kicked
			} else {
				st.Inc(slot, ev.LostWakeups)
			}
		}
	}
	st.ObserveBlocked(slot, uint64(time.Since(start)))
	return res
}

// awaitKick waits up to grace (> 0: only a watchdog ends a halt) for the
// kick of a served waiter, and reports whether it came. Spurious wake-ups
// go back to sleep.
func awaitKick(w *kick.Waiter, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		switch w.Sleep(left) {
		case kick.Kicked:
			return true
		case kick.TimedOut:
			return false
		}
	}
}

// epoch anchors Now.
var epoch = time.Now()

// Now returns monotonic nanoseconds since the process started using the
// lock core, never 0, so that 0 can mean "no time recorded".
func Now() int64 { return int64(time.Since(epoch)) + 1 }
