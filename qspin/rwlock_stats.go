package qspin

import (
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
)

// KindRWLock is the kind label of the RWLock statistics (lockstat.Stats
// Kind, the lock label of the Prometheus metrics).
const KindRWLock = lockcore.KindRWLock

// Event indexes of the RWLock statistics.
const (
	evReadAcquisitions = iota
	evWriteAcquisitions
	evReadSlowpath
	evWriteSlowpath
	evReadHalts
	evWriteHalts
	evReadKicks
	evWriteKicks
	evRWHaltTimeouts
	evRWLostWakeups
	numRWEvents
)

// Event names reported by RWStats snapshots. They come in pairs, one
// event for each role, reader or writer, of the goroutine it counts:
//
//   - ReadAcquisitions, WriteAcquisitions: successful RLocks and
//     TryRLocks; Locks and TryLocks, counted at their Unlock. Each lock
//     counts them in its own cache line and adds them to the counter 1024
//     at a time (while pvlock.Policy.Stats is on), so the counter trails
//     each lock by fewer than 1024, as qspin's Acquisitions does.
//   - ReadSlowpath, WriteSlowpath: RLocks that found a writer, and Locks
//     that found the lock held, and queued.
//   - ReadHalts, WriteHalts: halts of queue heads (PV): a reader's, waiting
//     for the writer inside to leave; a writer's, waiting for the readers
//     inside to leave.
//   - ReadKicks, WriteKicks: kicks of a halted writer head by the reader
//     whose count was the last one inside; kicks of a halted head by the
//     writer's Unlock.
//   - RWHaltTimeouts, RWLostWakeups: queue-head halts ended by the
//     pvlock.Policy.HaltTimeout watchdog (event halt_timeouts); those of
//     them whose way in was open, yet whose kick did not come within
//     another watchdog period (lost_wakeups).
const (
	ReadAcquisitions, WriteAcquisitions = lockcore.ReadAcquisitions, lockcore.WriteAcquisitions
	ReadSlowpath, WriteSlowpath         = lockcore.ReadSlowpath, lockcore.WriteSlowpath
	ReadHalts, WriteHalts               = lockcore.ReadHalts, lockcore.WriteHalts
	ReadKicks, WriteKicks               = lockcore.ReadKicks, lockcore.WriteKicks
	RWHaltTimeouts, RWLostWakeups       = lockcore.HaltTimeouts, lockcore.LostWakeups
)

var rwEventNames = []string{
	evReadAcquisitions: ReadAcquisitions, evWriteAcquisitions: WriteAcquisitions,
	evReadSlowpath: ReadSlowpath, evWriteSlowpath: WriteSlowpath,
	evReadHalts: ReadHalts, evWriteHalts: WriteHalts,
	evReadKicks: ReadKicks, evWriteKicks: WriteKicks,
	evRWHaltTimeouts: RWHaltTimeouts, evRWLostWakeups: RWLostWakeups,
}

// The table above names every event: compilation fails if one is added
// to the indexes and not named.
var _ = [1]struct{}{}[len(rwEventNames)-numRWEvents]

// rwHaltEvents are the events lockcore.Halt counts for an RWLock head.
var rwHaltEvents = lockcore.HaltEvents{Timeouts: evRWHaltTimeouts, LostWakeups: evRWLostWakeups}

var rwModeStats = [...]*lockcore.Stats{
	ModePV:        lockstat.New(KindRWLock, ModePV.String(), rwEventNames),
	ModePVNoSteal: lockstat.New(KindRWLock, ModePVNoSteal.String(), rwEventNames),
	ModeNative:    lockstat.New(KindRWLock, ModeNative.String(), rwEventNames),
	ModeTAS:       lockstat.New(KindRWLock, ModeTAS.String(), rwEventNames),
}

func (l *RWLock) stats() *lockcore.Stats {
	if l.named != nil {
		return l.named.Mode(int(l.wait.mode))
	}
	return rwModeStats[l.wait.mode]
}

// haltEvent is the halt event of a queue head of role.
func haltEvent(role int) int {
	if role == roleReader {
		return evReadHalts
	}
	return evWriteHalts
}

// RWStats returns the statistics of all RWLocks of mode m, summed over
// vCPUs (kind "qrwlock", mode m.String()). It panics on an unknown mode.
// The queue heads' halt durations go to the lockstat.Stats blocked-time
// histogram. The waits in an RWLock's queue are those of its wait lock, a
// Lock of the same mode, and are counted in Stats(m).
func RWStats(m Mode) *lockstat.Stats {
	return (*lockstat.Stats)(lockcore.ModeStats("qspin", rwModeStats[:], m))
}
