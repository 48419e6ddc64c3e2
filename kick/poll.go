package kick

import (
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
	"golang.org/x/sys/cpu"
)

// Halt-polling is the user-space counterpart of KVM's halt_poll_ns: a
// vCPU's waiter (one with a Domain) that is about to sleep first polls its
// own state word for a bounded window, so that a kick arriving soon costs a
// cache miss instead of a trip through the scheduler and a cross-CPU
// wake-up (tens of µs here).
//
// Polling is only free while the CPU would idle anyway, so a waiter polls
// only while its Domain has a CPU with nothing else to run: a Domain counts
// the waiters homed on its CPUs that are not halted, and the poll stops the
// moment that count reaches the Domain's capacity, when a sibling became
// runnable. This is KVM's single_task_running() check, answered for the
// threads pvlock knows about (its vCPUs) rather than for every task.
//
// The count is kept by the state transitions of the halt itself:
//
//	who      when                                   runnable
//	owner    thread starts / stops its work          +1 / -1  (Enter, Leave)
//	waiter   idle -> polling or sleeping (Halt)      -1
//	kicker   polling or sleeping -> kicked (Kick)    +1, before the swap
//	kicker   any other state -> kicked               +1 before, -1 after
//	waiter   sleeping -> idle without a kick         +1
//
// Every -1 of a halt is matched by exactly one +1: the kicker's, if its swap
// found the waiter polling or asleep, else the waiter's own. The kicker
// puts its target back before its swap can release it, so that a sibling
// polling on the target's CPU stops at once and leaves the CPU to the vCPU
// being woken, and a running waiter always finds itself counted; the count
// may briefly run one high, never low.

// Domain is a set of physical CPUs whose pinned waiters may halt-poll only
// while one of the CPUs would otherwise idle. pvlock gives every CPU its
// Domain (vCPUs pinned to one CPU) and every CPU set one (vCPUs that float
// over the set).
type Domain struct {
	_        cpu.CacheLinePad
	runnable atomic.Int32 // waiters homed here that are not halted
	homed    atomic.Int32 // waiters homed here, halted or not
	capacity int32        // CPUs in the domain
	_        cpu.CacheLinePad
}

// NewDomain returns a Domain of cpus CPUs (at least 1) with no runnable
// waiters.
func NewDomain(cpus int) *Domain {
	if cpus < 1 {
		cpus = 1
	}
	return &Domain{capacity: int32(cpus)}
}

// Enter counts one more waiter homed in the domain, and runnable: a thread
// homed here started running work.
func (d *Domain) Enter() {
	d.homed.Add(1)
	d.runnable.Add(1)
}

// Leave counts one homed and runnable waiter less: a thread homed here
// stopped.
func (d *Domain) Leave() {
	d.runnable.Add(-1)
	d.homed.Add(-1)
}

// PerCPU returns the number of waiters homed in the domain per CPU,
// rounded up: the domain's overcommit factor, at least 1.
func (d *Domain) PerCPU() int {
	return max(1, int(d.homed.Load()+d.capacity-1)/int(d.capacity))
}

// Runnable returns the number of waiters homed in the domain that are
// neither halted nor polling.
func (d *Domain) Runnable() int { return int(d.runnable.Load()) }

// Idle reports whether one of the domain's CPUs has no runnable waiter to
// run, that is, whether a poll there takes time from nobody we know of.
func (d *Domain) Idle() bool { return d.runnable.Load() < d.capacity }

// Contended reports whether the domain has more runnable waiters than
// CPUs. Asked by a running waiter (which counts itself), it means another
// waiter homed here is runnable and waits for the CPU the caller spins on.
func (d *Domain) Contended() bool { return d.runnable.Load() > d.capacity }

// Halt-poll window adaptation, after KVM's grow/shrink of halt_poll_ns.
const (
	// DefaultHaltPoll is the default ceiling of a halt-poll window: KVM's
	// halt_poll_ns on x86.
	DefaultHaltPoll = 200 * time.Microsecond
	// PollGrowStart is the first non-zero window of an adaptive waiter
	// (halt_poll_ns_grow_start).
	PollGrowStart = 10 * time.Microsecond
	// pollGrow and pollShrink are the factors a window grows and shrinks
	// by (halt_poll_ns_grow, and a halving shrink that drops to zero below
	// PollGrowStart).
	pollGrow   = 2
	pollShrink = 2
	// pollCheckEvery is how many polls pass between reads of the clock.
	pollCheckEvery = 8
)

// The halt-polling policy, set by SetHaltPoll: the home of pvlock's
// Policy.HaltPoll and Policy.HaltPollAdaptive, named as they are (the rest
// of the policy is lockcore's, a layer above kick).
var (
	haltPoll         atomic.Int64 // ceiling of the window, ns; 0 disables polling
	haltPollAdaptive atomic.Bool  // grow and shrink each waiter's window
)

func init() {
	haltPoll.Store(int64(DefaultHaltPoll))
	haltPollAdaptive.Store(true)
}

// SetHaltPoll sets the halt-polling policy of every waiter that has a
// Domain (pvlock's vCPUs; the pooled waiters of goroutines have none): max
// is the longest a waiter polls before it sleeps (0 turns polling off), and
// adaptive makes each waiter learn its own window between 0 and max from
// its recent halts, as KVM does; otherwise every poll lasts max. Negative
// max counts as 0.
func SetHaltPoll(max time.Duration, adaptive bool) {
	if max < 0 {
		max = 0
	}
	haltPollAdaptive.Store(adaptive)
	haltPoll.Store(int64(max))
}

// HaltPoll returns the halt-polling policy set by SetHaltPoll.
func HaltPoll() (max time.Duration, adaptive bool) {
	return time.Duration(haltPoll.Load()), haltPollAdaptive.Load()
}

// pollWindow returns the window of the waiter's next poll, in ns.
func (w *Waiter) pollWindow() int64 {
	max := haltPoll.Load()
	// Whatever the backend: only pvlock's vCPU waiters have a Domain, and
	// in a build without futexes they are Park waiters.
	if max <= 0 || w.domain.Load() == nil {
		return 0
	}
	if !haltPollAdaptive.Load() {
		return max
	}
	return min(w.pollNs.Load(), max)
}

// adapt updates an adaptive waiter's window after a halt that blocked for
// blocked ns, having polled with window ns (KVM's update_halt_poll_stats
// and grow/shrink rules):
//
//	blocked <= window           the poll caught the kick: keep the window
//	window < blocked <= max     the kick came soon after: grow
//	blocked > max               polling could not have helped: shrink
func (w *Waiter) adapt(window, blocked int64) {
	max := haltPoll.Load()
	if !haltPollAdaptive.Load() || max <= 0 {
		return
	}
	switch {
	case blocked <= window:
	case blocked <= max:
		next := max64(window*pollGrow, int64(PollGrowStart))
		w.pollNs.Store(min(next, max))
	default:
		next := window / pollShrink
		if next < int64(PollGrowStart) {
			next = 0
		}
		w.pollNs.Store(next)
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// poll spins on the waiter's state word for up to window ns while the
// domain has an idle CPU. It reports whether a kick arrived (the state is
// kicked, the token not yet consumed) and whether the poll was cut short
// because a sibling became runnable.
func (w *Waiter) poll(d *Domain, start time.Time, window int64) (kicked, invalid bool) {
	for i := 1; ; i++ {
		if atomic.LoadUint32(&w.state) == stateKicked {
			return true, false
		}
		if !d.Idle() {
			return false, true
		}
		if i%pollCheckEvery == 0 && int64(time.Since(start)) >= window {
			return false, false
		}
		relax.Pause(1)
	}
}
