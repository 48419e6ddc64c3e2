package ticket

import "github.com/pvlock/pvlock/pvlock"

// Event indexes of the ticket lock statistics. The slow-path names are the
// kernel's PV ticketlock debugfs counters.
const (
	evAcquisitions       = iota // acquisitions, added per lock in batches at release (see batchHeads)
	evAcquiredSlow              // taken after waiting (acquisitions - this = fast path)
	evTakenSlow                 // entered the PV slow path (published and flagged)
	evPickup                    // the re-check after flagging found the lock ours
	evHalts                     // actually halted
	evSpurious                  // woke without a kick
	evTimeouts                  // a halt hit the watchdog timeout
	evLostWakeups               // timed out although our ticket was being served
	evReleasedSlow              // unlocks that found the slowpath flag
	evReleasedSlowKicked        // slow unlocks that kicked a halted waiter
	evHaltEarly                 // waiters that halted before the threshold: the head was waking
)

// Event names, as reported by Stats snapshots.
const (
	// Acquisitions counts acquisitions. Each lock's head ticket counts its
	// own releases; the lock adds them to this counter at every 1024th
	// release of a PV lock (2048th of a native one), while
	// pvlock.StatsEnabled(), so that the fast path writes no line shared
	// with other locks: the counter trails each lock by less than a batch.
	Acquisitions       = "acquisitions"
	AcquiredSlow       = "acquired_slow"
	TakenSlow          = "taken_slow"
	TakenSlowPickup    = "taken_slow_pickup"
	Halts              = "halts"
	SpuriousWakeups    = "spurious_wakeups"
	HaltTimeouts       = "halt_timeouts"
	LostWakeups        = "lost_wakeups"
	ReleasedSlow       = "released_slow"
	ReleasedSlowKicked = "released_slow_kicked"
	HaltEarly          = "halt_early"
)

var eventNames = []string{
	Acquisitions, AcquiredSlow, TakenSlow, TakenSlowPickup, Halts,
	SpuriousWakeups, HaltTimeouts, LostWakeups, ReleasedSlow, ReleasedSlowKicked, HaltEarly,
}

var (
	pvStats     = pvlock.NewLockStats("ticket", "pv", eventNames)
	nativeStats = pvlock.NewLockStats("ticket", "native", eventNames)
)

// Stats returns the statistics of all PV ticket locks (pv true) or of all
// native ones, summed over vCPUs.
func Stats(pv bool) *pvlock.LockStats {
	if pv {
		return pvStats
	}
	return nativeStats
}
