package pvlock

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// ContentionProfileName is the name of the contention profile in
// runtime/pprof (pprof.Lookup) and under /debug/pprof/ of net/http/pprof.
const ContentionProfileName = lockcore.ContentionProfileName

// ContentionUnit is the waiting time one count of the contention profile
// stands for, at rate 1: a millisecond.
const ContentionUnit = lockcore.ContentionUnit

// MaxContentionUnits bounds the counts one wait adds to the contention
// profile: a wait longer than a second counts as a second.
const MaxContentionUnits = lockcore.MaxContentionUnits

// MaxContentionSamples bounds the samples the contention profile holds;
// beyond it the profile keeps a uniform random subset of them.
const MaxContentionSamples = lockcore.MaxContentionSamples

// SetContentionProfileRate controls the fraction of slow-path lock
// acquisitions sampled in the contention profile: on average 1 in rate.
// To turn sampling off, pass rate 0; a negative rate counts as 0. It
// returns the previous rate; the initial rate is 0. Samples already taken
// stay in the profile when the rate changes.
//
// ContentionProfileName ("pvlock.contention") is a runtime/pprof custom
// profile of slow-path acquisitions of the ticket and qspin locks, each
// with the stack of the goroutine that waited: from the lock's slow path
// up through its Lock call to the code that wanted the lock. It counts the
// time waited (spinning, halting and waiting at the gate), not the number
// of acquisitions. runtime/pprof's custom profiles hold only stacks and
// count them, so a sampled acquisition that waited d adds
// d/ContentionUnit samples of its stack (rounded at random to a whole
// number with that mean): a count is a millisecond of waiting, and a
// stack's share of the count is its share of the time waited, which is
// what `go tool pprof -top` sorts by.
//
// The rate works as runtime.SetMutexProfileFraction's does for the mutex
// profile: with 1 in rate acquisitions sampled, a count stands for about
// rate milliseconds of waiting. Off, the default, a slow path pays one atomic load and the fast paths
// nothing. The first positive rate registers the profile, and
// net/http/pprof serves it from then on as /debug/pprof/pvlock.contention:
//
//	pvlock.SetContentionProfileRate(1)
//	go tool pprof -top http://127.0.0.1:6060/debug/pprof/pvlock.contention
//
// The profile keeps at most MaxContentionSamples samples (a few MB). Once
// it is full, it keeps a uniform random subset of all the samples taken
// (reservoir sampling): the stacks' shares stay right while the total
// stops growing. A single wait counts at most MaxContentionUnits
// milliseconds.
func SetContentionProfileRate(rate int) int { return lockcore.SetContentionProfileRate(rate) }

// SetLockupThreshold turns the lockup detector on with threshold d (d <= 0
// turns it off) and returns the previous threshold; the initial one is 0,
// off. Waits that began while the detector was off are not watched.
//
// After the kernel's CONFIG_DEBUG_SPINLOCK ("spinlock lockup suspected"),
// SetLockupThreshold makes a waiter that has waited longer than the
// threshold for one acquisition report it, once: the lock, the waiter's
// goroutine, vCPU and stack, and the holder where the detector knows it
// (LockupReport). The report goes to the hook set with SetLockupHook,
// LogLockup (log/slog) by default, and counts in LockupsSuspected. The
// halt watchdog (Policy.HaltTimeout, a second by default) wakes a halted
// waiter again and again, so a deadlocked program never looks asleep to Go's deadlock detector:
// this is what says which lock it is stuck on. A halt that would outlast
// the threshold is cut at it to report, and spinning waiters look every
// thousand or so spins.
//
// The detector is off by default. While on, each slow-path acquisition
// pays a clock read, an update of a registry of waits and a look-up of
// its goroutine ID, a microsecond or two, which saturated locks would
// feel; and the watchdog's HaltTimeouts counter already flags a stuck
// waiter at no cost. Turn it on in tests, in staging, or in production
// when halt timeouts appear; a threshold of seconds, well above any
// legitimate hold time, keeps it quiet otherwise.
func SetLockupThreshold(d time.Duration) time.Duration { return lockcore.SetLockupThreshold(d) }

// LockupThreshold returns the lockup detector's threshold; 0 means off.
func LockupThreshold() time.Duration { return lockcore.LockupThreshold() }

// LockupsSuspected returns how many lockups have been reported since the
// process started, the counter behind pvlock_lockups_suspected_total.
func LockupsSuspected() uint64 { return lockcore.LockupsSuspected() }

// LockupReport is one report of the lockup detector: a waiter has waited
// longer than the threshold for one acquisition.
type LockupReport struct {
	// Lock is the lock's address, and Kind and Mode its kind and mode as
	// LockStats names them (e.g. "ticket" and "pv").
	Lock       uintptr
	Kind, Mode string
	// Waited is how long the waiter had waited, and Threshold the
	// threshold it passed.
	Waited, Threshold time.Duration
	// Goroutine is the waiter's goroutine ID, as its stack shows it.
	Goroutine uint64
	// VCPU is the waiter's vCPU, or nil for a goroutine that is not one.
	VCPU *VCPU
	// Stack is the waiter's stack, as runtime.Stack formats it.
	Stack []byte
	// Holder is the suspected holder, or nil if the detector does not know
	// it (see LockupHolder).
	Holder *LockupHolder
}

// LockupHolder is the suspected holder of a lock: the goroutine that last
// took the lock through its slow path while the detector was on, before
// the reported wait began. The locks record nothing on their fast paths,
// so a holder that took the lock free is not known, and a lock taken free
// since by another goroutine leaves an older holder named here.
type LockupHolder struct {
	// Goroutine is the holder's goroutine ID; it equals the report's
	// Goroutine when a goroutine waits for a lock it holds itself.
	Goroutine uint64
	// VCPU is the holder's vCPU, or nil for a goroutine that is not one.
	VCPU *VCPU
	// Held is how long ago it took the lock.
	Held time.Duration
}

// LogValue makes a report log as a group of its fields (slog.LogValuer).
func (r LockupReport) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("lock", fmt.Sprintf("%#x", r.Lock)),
		slog.String("kind", r.Kind),
		slog.String("mode", r.Mode),
		slog.Duration("waited", r.Waited),
		slog.Duration("threshold", r.Threshold),
		slog.Uint64("goroutine", r.Goroutine),
	}
	if r.VCPU != nil {
		attrs = append(attrs, slog.String("vcpu", vcpuName(r.VCPU)))
	}
	if h := r.Holder; h != nil {
		holder := []any{slog.Uint64("goroutine", h.Goroutine), slog.Duration("held", h.Held)}
		if h.VCPU != nil {
			holder = append(holder, slog.String("vcpu", vcpuName(h.VCPU)))
		}
		attrs = append(attrs, slog.Group("holder", holder...))
	}
	attrs = append(attrs, slog.String("stack", string(r.Stack)))
	return slog.GroupValue(attrs...)
}

// vcpuName names a vCPU as "vm/index".
func vcpuName(v *VCPU) string { return fmt.Sprintf("%s/%d", v.vm.Name(), v.index) }

// LogLockup is the default lockup hook: it logs r at level Warn with
// log/slog's default logger.
func LogLockup(r LockupReport) {
	slog.Warn("pvlock: lockup suspected", "lockup", r)
}

// SetLockupHook makes h receive the lockup reports, in place of LogLockup,
// and returns the previous hook (nil for LogLockup); nil restores
// LogLockup. The hook runs on the waiting goroutine, which goes on waiting
// when it returns: it must not wait for the lock itself.
func SetLockupHook(h func(LockupReport)) func(LockupReport) {
	hookMu.Lock()
	defer hookMu.Unlock()
	prev := userHook
	userHook = h
	if h == nil {
		lockcore.SetLockupHook(func(l lockcore.Lockup) { LogLockup(reportOf(l)) })
	} else {
		lockcore.SetLockupHook(func(l lockcore.Lockup) { h(reportOf(l)) })
	}
	return prev
}

// The default hook, LogLockup, is set as the package loads: the lock core
// has none of its own.
var _ = SetLockupHook(nil)

// hookMu serialises SetLockupHook; userHook is the hook it set, nil for
// LogLockup.
var (
	hookMu   sync.Mutex
	userHook func(LockupReport)
)

func init() { lockcore.SetLockupHook(func(l lockcore.Lockup) { LogLockup(reportOf(l)) }) }

// reportOf turns the lock core's report into a LockupReport.
func reportOf(l lockcore.Lockup) LockupReport {
	r := LockupReport{Lock: l.Lock, Kind: l.Kind, Mode: l.Mode, Waited: l.Waited, Threshold: l.Threshold,
		Goroutine: l.Goroutine, VCPU: vcpuOf(l.VCPU), Stack: l.Stack}
	if h := l.Holder; h != nil {
		r.Holder = &LockupHolder{Goroutine: h.Goroutine, VCPU: vcpuOf(h.VCPU), Held: h.Held}
	}
	return r
}
