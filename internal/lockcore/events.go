package lockcore

import (
	"fmt"

	"github.com/pvlock/pvlock/lockstat"
)

// Lock kinds and modes: the labels of a Stats (lockstat.Stats.Kind and
// Mode, the lock and mode labels of the Prometheus metrics).
const (
	KindTicket = "ticket"
	KindQspin  = "qspin"
	KindTAS    = "tas"
	KindRWLock = "qrwlock"

	ModePV        = "pv"
	ModePVNoSteal = "pv-nosteal"
	ModeNative    = "native"
	ModeTAS       = "tas"
)

// Event names, each defined once here. The lock packages index them with
// keyed tables (ticket and qspin stats.go) and document what each counts
// for their lock; the Prometheus collector maps them to metrics.
const (
	// Both locks.
	Acquisitions = "acquisitions"
	Halts        = "halts"
	HaltTimeouts = "halt_timeouts"
	LostWakeups  = "lost_wakeups"

	// The ticket lock: the kernel's PV ticketlock debugfs counters.
	AcquiredSlow       = "acquired_slow"
	TakenSlow          = "taken_slow"
	TakenSlowPickup    = "taken_slow_pickup"
	SpuriousWakeups    = "spurious_wakeups"
	ReleasedSlow       = "released_slow"
	ReleasedSlowKicked = "released_slow_kicked"
	HaltEarly          = "halt_early"

	// The queued lock: the kernel's lock events
	// (kernel/locking/lock_events_list.h).
	LockPending      = "lock_pending"
	LockSlowpath     = "lock_slowpath"
	LockNoNode       = "lock_no_node"
	PVLockStealing   = "pv_lock_stealing"
	PVWaitNode       = "pv_wait_node"
	PVWaitEarly      = "pv_wait_early"
	PVWaitHead       = "pv_wait_head"
	PVWaitAgain      = "pv_wait_again"
	PVHeadStarving   = "pv_head_starving"
	PVSpuriousWakeup = "pv_spurious_wakeup"
	PVKickUnlock     = "pv_kick_unlock"
	PVKickWake       = "pv_kick_wake"
	PVLatencyKick    = "pv_latency_kick"
	PVLatencyWake    = "pv_latency_wake"
	PVHashHops       = "pv_hash_hops"

	// The queued reader-writer lock, by the role of the goroutine
	// counted: a reader or a writer.
	ReadAcquisitions  = "read_acquisitions"
	WriteAcquisitions = "write_acquisitions"
	ReadSlowpath      = "read_slowpath"
	WriteSlowpath     = "write_slowpath"
	ReadHalts         = "read_halts"
	WriteHalts        = "write_halts"
	ReadKicks         = "read_kicks"
	WriteKicks        = "write_kicks"

	// Concurrency restriction, both locks (see Gate).
	PassiveWaits    = "passive_waits"
	PassiveHalts    = "passive_halts"
	PassiveSpurious = "passive_spurious_wakeups"
	PassiveKicks    = "passive_kicks"
	AdmittedDrained = "admitted_drained"
	AdmittedFair    = "admitted_fair"
	AdmittedStacked = "admitted_stacked"
	PassiveWatches  = "passive_watches"
	PassiveCulls    = "passive_culls"
	AdmittedBeside  = "admitted_beside"
)

// gateEventNames are the events a Gate counts, in the order a lock's event
// table appends them (WithGateEvents).
var gateEventNames = [...]string{PassiveWaits, PassiveHalts, PassiveSpurious, PassiveKicks, AdmittedDrained, AdmittedFair, AdmittedStacked, PassiveWatches, PassiveCulls, AdmittedBeside}

// NumGateEvents is the number of events a Gate counts.
const NumGateEvents = len(gateEventNames)

// WithGateEvents returns a lock's event names followed by the gate's: the
// gate's events get the indexes len(names) onwards, which GateEventsAt
// turns into a GateEvents.
func WithGateEvents(names []string) []string {
	return append(append([]string(nil), names...), gateEventNames[:]...)
}

// GateEventsAt returns the GateEvents of a lock whose event table has the
// gate's events from index first on (WithGateEvents), and whose halt
// events are halt.
func GateEventsAt(first int, halt HaltEvents) GateEvents {
	return GateEvents{
		Passive: first, PassiveHalts: first + 1, PassiveSpurious: first + 2, PassiveKicks: first + 3,
		AdmittedDrain: first + 4, AdmittedFair: first + 5, AdmittedStack: first + 6, Watches: first + 7, Culled: first + 8, Beside: first + 9,
		Halt: halt,
	}
}

// Label returns labels[v], the name of the value v of an enumeration, or
// "typ(v)" for a value without one: the String method of a lock mode, a
// pinning policy, a vCPU state.
func Label[E ~int | ~uint8 | ~uint32](labels []string, v E, typ string) string {
	if uint64(v) < uint64(len(labels)) {
		return labels[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// LockStats returns the statistics a lock of mode m counts in: its name's
// (named, from the package's Name option), if it has one, else stats[m],
// its mode's.
func LockStats[M ~uint8 | ~uint32](named *lockstat.Named, stats []*Stats, m M) *Stats {
	if named != nil {
		return named.Mode(int(m))
	}
	return stats[m]
}

// ModeStats returns stats[m], the statistics of a lock package's mode m,
// and panics on a mode it does not have: the package's Stats function.
func ModeStats[M ~uint8 | ~uint32](pkg string, stats []*Stats, m M) *Stats {
	if int(m) >= len(stats) {
		panic(fmt.Sprintf("%s: Stats of unknown mode %v", pkg, m))
	}
	return stats[m]
}
