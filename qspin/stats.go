package qspin

import (
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
)

// Mode names a qspin variant; each has its own statistics.
type Mode uint8

const (
	// ModePV is the paravirtualized queued lock with lock stealing (the
	// zero value of Lock).
	ModePV Mode = iota
	// ModePVNoSteal is the PV queued lock without lock stealing.
	ModePVNoSteal
	// ModeNative is the native queued lock: waiters only spin.
	ModeNative
	// ModeTAS is the unfair test-and-set lock (virt_spin_lock).
	ModeTAS
)

var modeLabels = [...]string{
	ModePV:        lockcore.ModePV,
	ModePVNoSteal: lockcore.ModePVNoSteal,
	ModeNative:    lockcore.ModeNative,
	ModeTAS:       lockcore.ModeTAS,
}

// String returns the mode's label: "pv", "pv-nosteal", "native" or "tas"
// (the statistics of a TAS lock are labelled kind "tas", mode "native").
func (m Mode) String() string { return lockcore.Label(modeLabels[:], m, "Mode") }

// Event indexes of the qspin statistics.
const (
	evAcquisitions = iota
	evLockPending
	evLockSlowpath
	evLockNoNode
	evLockStealing
	evWaitNode
	evWaitEarly
	evWaitHead
	evWaitAgain
	evHeadStarving
	evSpurious
	evKickUnlock
	evKickWake
	evLatencyKick
	evLatencyWake
	evHashHops
	evHalts
	evHaltTimeouts
	evLostWakeups
	evGate    // the gate's events from here on (lockcore.WithGateEvents)
	numEvents = evGate + lockcore.NumGateEvents
)

// eventNames names the events by index: the lock's own, then the gate's.
var eventNames = lockcore.WithGateEvents([]string{
	evAcquisitions: Acquisitions, evLockPending: LockPending, evLockSlowpath: LockSlowpath,
	evLockNoNode: LockNoNode, evLockStealing: PVLockStealing,
	evWaitNode: PVWaitNode, evWaitEarly: PVWaitEarly, evWaitHead: PVWaitHead, evWaitAgain: PVWaitAgain, evHeadStarving: PVHeadStarving,
	evSpurious: PVSpuriousWakeup, evKickUnlock: PVKickUnlock, evKickWake: PVKickWake,
	evLatencyKick: PVLatencyKick, evLatencyWake: PVLatencyWake, evHashHops: PVHashHops,
	evHalts: Halts, evHaltTimeouts: HaltTimeouts, evLostWakeups: LostWakeups,
}[:evGate])

// gateEvents are the events the lock's gate counts.
var gateEvents = lockcore.GateEventsAt(evGate, haltEvents)

// Event names reported by Stats snapshots. The lock_* and pv_* names and
// meanings are the kernel's lock events (kernel/locking/lock_events_list.h).
const (
	// Acquisitions counts successful Locks and TryLocks. Each lock counts
	// its own releases in its own cache line and adds them to this
	// counter 1024 at a time, at every 1024th release (while
	// pvlock.Policy.Stats is on), so that the fast path writes no line
	// shared with other locks: the counter trails each lock by fewer than
	// 1024.
	Acquisitions = lockcore.Acquisitions
	// LockPending counts native acquisitions through the pending bit.
	LockPending = lockcore.LockPending
	// LockSlowpath counts acquisitions through the MCS queue.
	LockSlowpath = lockcore.LockSlowpath
	// LockNoNode counts acquisitions by waiters that found no free queue
	// node and spun on a trylock instead.
	LockNoNode = lockcore.LockNoNode
	// PVLockStealing counts PV acquisitions by the unfair trylock that
	// runs before queueing.
	PVLockStealing = lockcore.PVLockStealing
	// PVWaitNode counts halts of non-head queued waiters.
	PVWaitNode = lockcore.PVWaitNode
	// PVWaitEarly counts those halts taken early because the predecessor
	// was not running.
	PVWaitEarly = lockcore.PVWaitEarly
	// PVWaitHead counts the queue head reaching its halt point (it
	// halts unless the lock was released meanwhile).
	PVWaitHead = lockcore.PVWaitHead
	// PVWaitAgain counts spin rounds of a queue head that was kicked but
	// found its lock stolen, and so spins on: with pending set once it is
	// starving, else until the unlocker has marked its entry gone.
	PVWaitAgain = lockcore.PVWaitAgain
	// PVHeadStarving counts queue heads of a lock with stealing that were
	// overtaken for a millisecond and so closed the lock to stealers.
	PVHeadStarving = lockcore.PVHeadStarving
	// PVSpuriousWakeup counts non-head waiters that woke before they
	// became queue head.
	PVSpuriousWakeup = lockcore.PVSpuriousWakeup
	// PVKickUnlock counts kicks issued by Unlock of a SLOW lock.
	PVKickUnlock = lockcore.PVKickUnlock
	// PVKickWake counts halts that ended by a kick whose time was
	// recorded (the divisor of PVLatencyWake).
	PVKickWake = lockcore.PVKickWake
	// PVLatencyKick is the total time, in nanoseconds, spent issuing
	// kicks (divide by PVKickUnlock).
	PVLatencyKick = lockcore.PVLatencyKick
	// PVLatencyWake is the total kick-to-wake-up latency in nanoseconds
	// (divide by PVKickWake; see WakeLatency).
	PVLatencyWake = lockcore.PVLatencyWake
	// PVHashHops is the total number of slots probed by hash insertions
	// (divide by PVKickUnlock for the kernel's average).
	PVHashHops = lockcore.PVHashHops
	// Halts counts halts that actually went to sleep or consumed a kick.
	Halts = lockcore.Halts
	// HaltTimeouts counts halts ended by the pvlock.Policy.HaltTimeout
	// watchdog.
	HaltTimeouts = lockcore.HaltTimeouts
	// LostWakeups counts halt timeouts of a queue head whose lock was
	// free at the time, and whose kick did not come within another
	// watchdog period.
	LostWakeups = lockcore.LostWakeups
	// PassiveWaits counts waits outside the lock, with no queue node, while
	// it was saturated (concurrency restriction, see Lock): arrivals that
	// found the active set full, and admitted waiters of a lock with
	// stealing that spun for the lock in vain.
	PassiveWaits = lockcore.PassiveWaits
	// PassiveHalts counts halts of those waiters.
	PassiveHalts = lockcore.PassiveHalts
	// PassiveSpurious counts wake-ups of a passive waiter that had not been
	// admitted.
	PassiveSpurious = lockcore.PassiveSpurious
	// PassiveKicks counts admissions that kicked a halted passive waiter.
	PassiveKicks = lockcore.PassiveKicks
	// AdmittedDrained counts passive waiters admitted by a release that
	// found no active waiter, or by a watcher that found the lock left
	// free.
	AdmittedDrained = lockcore.AdmittedDrained
	// AdmittedFair counts passive waiters admitted by the fairness bound:
	// by a release while active waiters remained, or by a watcher itself.
	AdmittedFair = lockcore.AdmittedFair
	// AdmittedStacked counts passive waiters admitted by the fairness
	// bound of a deep queue (sixteen waiting outside per CPU, or more)
	// while another admitted waiter was still on its way in: the fair
	// admissions that stacked, which AdmittedFair does not include.
	AdmittedStacked = lockcore.AdmittedStacked
	// PassiveWatches counts passive waits that watched the lock while the
	// waiter's CPU would have idled, rather than halt (a vCPU with no
	// runnable sibling, or a goroutine of a program with no more Ps than
	// CPUs): releases left them outside until the lock stayed free, or
	// the fairness bound.
	PassiveWatches = lockcore.PassiveWatches
	// PassiveCulls counts passive waits of vCPUs that found room among
	// the active waiters but went outside in exchange for a passive
	// waiter just admitted, or because their turn in the active set was
	// over (on a deep queue).
	PassiveCulls = lockcore.PassiveCulls
	// AdmittedBeside counts admissions by a vCPU's release that would
	// have been swaps but made none: the lock's waiters work outside it,
	// and the admitted waiter slept on the releaser's own CPU, so the
	// next running vCPU that found room among the active waiters stayed
	// in (PassiveCulls counts the swaps made).
	AdmittedBeside = lockcore.AdmittedBeside
)

var modeStats = [...]*lockcore.Stats{
	ModePV:        lockstat.New(lockcore.KindQspin, ModePV.String(), eventNames),
	ModePVNoSteal: lockstat.New(lockcore.KindQspin, ModePVNoSteal.String(), eventNames),
	ModeNative:    lockstat.New(lockcore.KindQspin, ModeNative.String(), eventNames),
	ModeTAS:       lockstat.New(lockcore.KindTAS, lockcore.ModeNative, eventNames),
}

// Stats returns the statistics of all qspin locks of mode m, summed over
// vCPUs (kind "qspin", mode m.String()). It panics on an unknown mode.
// Halt durations go to the lockstat.Stats blocked-time histogram.
func Stats(m Mode) *lockstat.Stats {
	return lockcore.ModeStats("qspin", modeStats[:], m)
}

// WakeLatency returns the mean kick-to-wake-up latency recorded in a
// snapshot of qspin statistics (PVLatencyWake / PVKickWake), or 0 if no
// kicked halt was timed.
func WakeLatency(s lockstat.Snapshot) time.Duration {
	n := s.Get(PVKickWake)
	if n == 0 {
		return 0
	}
	return time.Duration(s.Get(PVLatencyWake) / n)
}

// now returns monotonic nanoseconds, never 0 (0 means "no kick
// recorded").
func now() int64 { return lockcore.Now() }
