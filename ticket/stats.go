package ticket

import (
	"fmt"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/pvlock"
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

// String returns the mode's statistics label: "pv" or "native".
func (m Mode) String() string {
	switch m {
	case ModePV:
		return lockcore.ModePV
	case ModeNative:
		return lockcore.ModeNative
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// Event indexes of the ticket lock statistics.
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
	numEvents
)

// eventNames names the events by index.
var eventNames = [numEvents]string{
	evAcquisitions:       Acquisitions,
	evAcquiredSlow:       AcquiredSlow,
	evTakenSlow:          TakenSlow,
	evPickup:             TakenSlowPickup,
	evHalts:              Halts,
	evSpurious:           SpuriousWakeups,
	evTimeouts:           HaltTimeouts,
	evLostWakeups:        LostWakeups,
	evReleasedSlow:       ReleasedSlow,
	evReleasedSlowKicked: ReleasedSlowKicked,
	evHaltEarly:          HaltEarly,
}

// haltEvents are the events lockcore.Halt counts for a ticket lock.
var haltEvents = lockcore.HaltEvents{Timeouts: evTimeouts, LostWakeups: evLostWakeups}

// Event names, as reported by Stats snapshots. The slow-path names are the
// kernel's PV ticketlock debugfs counters.
const (
	// Acquisitions counts acquisitions. Each lock's head ticket counts its
	// own releases; the lock adds them to this counter at every 1024th
	// release of a PV lock (2048th of a native one), while
	// pvlock.Policy.Stats is on, so that the fast path writes no line
	// shared with other locks: the counter trails each lock by less than
	// a batch.
	Acquisitions = lockcore.Acquisitions
	// AcquiredSlow counts acquisitions that had to wait (Acquisitions
	// minus AcquiredSlow took the fast path), while pvlock.Policy.Stats is on.
	AcquiredSlow = lockcore.AcquiredSlow
	// TakenSlow counts entries into the PV slow path: published and flagged.
	TakenSlow = lockcore.TakenSlow
	// TakenSlowPickup counts slow-path entries whose re-check after
	// flagging found the lock ours, so the waiter did not halt.
	TakenSlowPickup = lockcore.TakenSlowPickup
	// Halts counts waiters that actually halted.
	Halts = lockcore.Halts
	// SpuriousWakeups counts halts that ended without a kick.
	SpuriousWakeups = lockcore.SpuriousWakeups
	// HaltTimeouts counts halts ended by the pvlock.Policy.HaltTimeout
	// watchdog.
	HaltTimeouts = lockcore.HaltTimeouts
	// LostWakeups counts halt timeouts of a waiter whose ticket was being
	// served: its kick never came.
	LostWakeups = lockcore.LostWakeups
	// ReleasedSlow counts unlocks that found the slowpath flag.
	ReleasedSlow = lockcore.ReleasedSlow
	// ReleasedSlowKicked counts slow unlocks that kicked a halted waiter.
	ReleasedSlowKicked = lockcore.ReleasedSlowKicked
	// HaltEarly counts waiters that halted before their spin threshold
	// because the ticket being served belonged to a waiter still waking up.
	HaltEarly = lockcore.HaltEarly
)

var modeStats = [...]*lockcore.Stats{
	ModePV:     lockcore.NewStats(lockcore.KindTicket, ModePV.String(), eventNames[:]),
	ModeNative: lockcore.NewStats(lockcore.KindTicket, ModeNative.String(), eventNames[:]),
}

func (l *Lock) stats() *lockcore.Stats { return modeStats[l.mode] }

// Stats returns the statistics of all ticket locks of mode m, summed over
// vCPUs (kind "ticket", mode m.String()). It panics on an unknown mode.
// Halt durations go to the LockStats blocked-time histogram.
func Stats(m Mode) *pvlock.LockStats {
	if int(m) >= len(modeStats) {
		panic(fmt.Sprintf("ticket: Stats of unknown mode %v", m))
	}
	return (*pvlock.LockStats)(modeStats[m])
}
