package qspin

import (
	"fmt"
	"time"

	"github.com/pvlock/pvlock/pvlock"
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

// String returns the mode's statistics label: "pv", "pv-nosteal",
// "native" or "tas".
func (m Mode) String() string {
	switch m {
	case ModePV:
		return "pv"
	case ModePVNoSteal:
		return "pv-nosteal"
	case ModeNative:
		return "native"
	case ModeTAS:
		return "tas"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Event indexes; the order matches eventNames.
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
	evSpurious
	evKickUnlock
	evKickWake
	evLatencyKick
	evLatencyWake
	evHashHops
	evHalts
	evHaltTimeouts
	evLostWakeups
)

// Event names reported by Stats snapshots. The lock_* and pv_* names and
// meanings are the kernel's lock events (kernel/locking/lock_events_list.h).
const (
	// Acquisitions counts successful Locks and TryLocks. Each lock counts
	// its own releases in its own cache line and adds them to this
	// counter 1024 at a time, at every 1024th release (while
	// pvlock.StatsEnabled()), so that the fast path writes no line shared
	// with other locks: the counter trails each lock by fewer than 1024.
	Acquisitions = "acquisitions"
	// LockPending counts native acquisitions through the pending bit.
	LockPending = "lock_pending"
	// LockSlowpath counts acquisitions through the MCS queue.
	LockSlowpath = "lock_slowpath"
	// LockNoNode counts acquisitions by waiters that found no free queue
	// node and spun on a trylock instead.
	LockNoNode = "lock_no_node"
	// PVLockStealing counts PV acquisitions by the unfair trylock that
	// runs before queueing.
	PVLockStealing = "pv_lock_stealing"
	// PVWaitNode counts halts of non-head queued waiters.
	PVWaitNode = "pv_wait_node"
	// PVWaitEarly counts those halts taken early because the predecessor
	// was not running.
	PVWaitEarly = "pv_wait_early"
	// PVWaitHead counts the queue head reaching its halt point (it
	// halts unless the lock was released meanwhile).
	PVWaitHead = "pv_wait_head"
	// PVWaitAgain counts spin rounds of a queue head that was kicked but
	// found its lock stolen, and so spins on with pending set.
	PVWaitAgain = "pv_wait_again"
	// PVSpuriousWakeup counts non-head waiters that woke before they
	// became queue head.
	PVSpuriousWakeup = "pv_spurious_wakeup"
	// PVKickUnlock counts kicks issued by Unlock of a SLOW lock.
	PVKickUnlock = "pv_kick_unlock"
	// PVKickWake counts halts that ended by a kick whose time was
	// recorded (the divisor of PVLatencyWake).
	PVKickWake = "pv_kick_wake"
	// PVLatencyKick is the total time, in nanoseconds, spent issuing
	// kicks (divide by PVKickUnlock).
	PVLatencyKick = "pv_latency_kick"
	// PVLatencyWake is the total kick-to-wake-up latency in nanoseconds
	// (divide by PVKickWake; see WakeLatency).
	PVLatencyWake = "pv_latency_wake"
	// PVHashHops is the total number of slots probed by hash insertions
	// (divide by PVKickUnlock for the kernel's average).
	PVHashHops = "pv_hash_hops"
	// Halts counts halts that actually went to sleep or consumed a kick.
	Halts = "halts"
	// HaltTimeouts counts halts ended by the pvlock.HaltTimeout watchdog.
	HaltTimeouts = "halt_timeouts"
	// LostWakeups counts halt timeouts of a queue head whose lock was
	// free at the time: its kick never came.
	LostWakeups = "lost_wakeups"
)

var eventNames = []string{
	Acquisitions, LockPending, LockSlowpath, LockNoNode, PVLockStealing,
	PVWaitNode, PVWaitEarly, PVWaitHead, PVWaitAgain, PVSpuriousWakeup,
	PVKickUnlock, PVKickWake, PVLatencyKick, PVLatencyWake, PVHashHops,
	Halts, HaltTimeouts, LostWakeups,
}

var modeStats = [...]*pvlock.LockStats{
	ModePV:        pvlock.NewLockStats("qspin", ModePV.String(), eventNames),
	ModePVNoSteal: pvlock.NewLockStats("qspin", ModePVNoSteal.String(), eventNames),
	ModeNative:    pvlock.NewLockStats("qspin", ModeNative.String(), eventNames),
	ModeTAS:       pvlock.NewLockStats("tas", "native", eventNames),
}

// Stats returns the statistics of all qspin locks of mode m, summed over
// vCPUs (kind "qspin", mode m.String()). It panics on an unknown mode.
// Halt durations go to the LockStats blocked-time histogram.
func Stats(m Mode) *pvlock.LockStats {
	if int(m) >= len(modeStats) {
		panic(fmt.Sprintf("qspin: Stats of unknown mode %v", m))
	}
	return modeStats[m]
}

// WakeLatency returns the mean kick-to-wake-up latency recorded in a
// snapshot of qspin statistics (PVLatencyWake / PVKickWake), or 0 if no
// kicked halt was timed.
func WakeLatency(s pvlock.Snapshot) time.Duration {
	n := s.Get(PVKickWake)
	if n == 0 {
		return 0
	}
	return time.Duration(s.Get(PVLatencyWake) / n)
}

// epoch anchors the monotonic timestamps kickers store in nodes.
var epoch = time.Now()

// now returns monotonic nanoseconds since epoch, never 0 (0 means "no
// kick recorded").
func now() int64 { return int64(time.Since(epoch)) + 1 }
