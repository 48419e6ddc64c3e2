package ticket

import (
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
)

// Mode names a ticket lock variant; each has its own statistics.
type Mode uint32

const (
	// ModePV is the paravirtualized ticket lock (the zero value of Lock):
	// tickets step by 2, and the tail's LSB is the slowpath flag.
	ModePV Mode = iota
	// ModeNative is the native ticket lock: tickets step by 1 and waiters
	// only spin.
	ModeNative
)

var modeLabels = [...]string{ModePV: lockcore.ModePV, ModeNative: lockcore.ModeNative}

// String returns the mode's statistics label: "pv" or "native".
func (m Mode) String() string { return lockcore.Label(modeLabels[:], m, "Mode") }

// Event indexes of the ticket lock statistics.
const (
	evAcquisitions       = iota // acquisitions, added per lock in batches at release (see batchHeads)
	evAcquiredSlow              // taken after waiting (acquisitions - this = fast path)
	evTakenSlow                 // entered the PV slow path (published and flagged)
	evPickup                    // the re-check after flagging found the lock ours
	evHalts                     // actually halted
	evSpurious                  // woke without a kick
	evTimeouts                  // a halt hit the watchdog timeout
	evLostWakeups               // timed out although our ticket was served, and no kick followed
	evReleasedSlow              // unlocks that found the slowpath flag, sampled: see releasedSlowSample
	evReleasedSlowKicked        // slow unlocks that kicked a halted waiter
	evHaltEarly                 // waiters that halted before the threshold: the head was waking
	evGate                      // the gate's events from here on (lockcore.WithGateEvents)
	numEvents            = evGate + lockcore.NumGateEvents
)

// eventNames names the events by index: the lock's own, then the gate's.
var eventNames = lockcore.WithGateEvents([]string{
	evAcquisitions: Acquisitions, evAcquiredSlow: AcquiredSlow,
	evTakenSlow: TakenSlow, evPickup: TakenSlowPickup, evHalts: Halts, evSpurious: SpuriousWakeups,
	evTimeouts: HaltTimeouts, evLostWakeups: LostWakeups,
	evReleasedSlow: ReleasedSlow, evReleasedSlowKicked: ReleasedSlowKicked, evHaltEarly: HaltEarly,
}[:evGate])

// gateEvents are the events the lock's gate counts.
var gateEvents = lockcore.GateEventsAt(evGate, haltEvents)

// Event names, as reported by Stats snapshots. The slow-path names are the
// kernel's PV ticketlock debugfs counters. Acquisitions and AcquiredSlow
// are counted while pvlock.Policy.Stats is on, the others always.
// Acquisitions are added up in the lock itself, as its head ticket counts
// its releases: the lock adds them to the counter at every 1024th release
// of a PV lock (2048th of a native one), so that the fast path writes no
// line shared with other locks, and the counter trails each lock by less
// than a batch.
const (
	Acquisitions       = lockcore.Acquisitions       // acquisitions
	AcquiredSlow       = lockcore.AcquiredSlow       // acquisitions that waited (the rest took the fast path)
	TakenSlow          = lockcore.TakenSlow          // entries into the PV slow path: published and flagged
	TakenSlowPickup    = lockcore.TakenSlowPickup    // of those, re-checks after flagging that found the lock ours: no halt
	Halts              = lockcore.Halts              // waiters that actually halted
	SpuriousWakeups    = lockcore.SpuriousWakeups    // halts that ended without a kick
	HaltTimeouts       = lockcore.HaltTimeouts       // halts ended by the pvlock.Policy.HaltTimeout watchdog
	LostWakeups        = lockcore.LostWakeups        // of those, halts of a waiter whose ticket was served and whose kick did not come within another watchdog period
	ReleasedSlow       = lockcore.ReleasedSlow       // unlocks that found the slowpath flag, estimated from one release in 16 (by its ticket), each counting 16
	ReleasedSlowKicked = lockcore.ReleasedSlowKicked // of those, unlocks that kicked a halted waiter, counted exactly (so over a short span it may exceed the estimate of ReleasedSlow)
	HaltEarly          = lockcore.HaltEarly          // halts before the spin threshold: the ticket served was a waiter's still waking up
	PassiveWaits       = lockcore.PassiveWaits       // waits outside the lock, without a ticket, while it was saturated (concurrency restriction)
	PassiveHalts       = lockcore.PassiveHalts       // halts of those waiters
	PassiveSpurious    = lockcore.PassiveSpurious    // wake-ups of a passive waiter that had not been admitted
	PassiveKicks       = lockcore.PassiveKicks       // admissions that kicked a halted passive waiter
	AdmittedDrained    = lockcore.AdmittedDrained    // passive waiters admitted by a release that found no waiter with a ticket, or by a watcher that found the lock left free
	AdmittedFair       = lockcore.AdmittedFair       // passive waiters admitted by the fairness bound, by a release while others held tickets or by a watcher itself
	AdmittedStacked    = lockcore.AdmittedStacked    // passive waiters admitted by the fairness bound of a deep queue while another admitted one was still on its way in
	PassiveWatches     = lockcore.PassiveWatches     // passive waits that watched the lock, their CPU otherwise idle, rather than halt (vCPUs, and goroutines when GOMAXPROCS <= NumCPU)
	PassiveCulls       = lockcore.PassiveCulls       // passive waits of vCPUs that found room among the active waiters but went outside in exchange for one just admitted, or at the end of their turn on a deep queue
	AdmittedBeside     = lockcore.AdmittedBeside     // admissions by a vCPU's release that would have been swaps but made none: the waiters worked outside the lock and the admitted one slept on the releaser's CPU
)

var modeStats = [...]*lockcore.Stats{
	ModePV:     lockstat.New(lockcore.KindTicket, ModePV.String(), eventNames),
	ModeNative: lockstat.New(lockcore.KindTicket, ModeNative.String(), eventNames),
}

// Stats returns the statistics of all ticket locks of mode m, summed over
// vCPUs (kind "ticket", mode m.String()). It panics on an unknown mode.
// Halt durations go to the lockstat.Stats blocked-time histogram.
func Stats(m Mode) *lockstat.Stats {
	return lockcore.ModeStats("ticket", modeStats[:], m)
}
