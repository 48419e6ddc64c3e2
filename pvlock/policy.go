package pvlock

import (
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
)

// DefaultSpinThreshold is the number of polls a PV waiter spins before it
// halts: the kernel's SPIN_THRESHOLD (1<<15), chosen there to avoid halts,
// and the wake-up latency they cost, when vCPUs are not overcommitted.
const DefaultSpinThreshold = lockcore.DefaultSpinThreshold

// DefaultHaltTimeout bounds a single halt: one second. A waiter whose halt times out
// goes back to spinning, and the lock counts the timeout; a correct PV
// protocol never needs it, so a non-zero count means a lost wake-up or a
// lock held for longer than the timeout.
const DefaultHaltTimeout = lockcore.DefaultHaltTimeout

// Policy is the process-wide policy of the PV locks and the vCPUs: how
// waiters wait, what the locks count, and when vCPUs give their CPU away.
// CurrentPolicy returns it and SetPolicy replaces it; each field takes
// effect at the next wait, halt or check that reads it.
type Policy struct {
	// PVSpin turns the PV slow path of every PV lock on or off at once,
	// like the kernel's nopvspin boot option: with it off, PV locks spin
	// without ever halting (their lock word layout stays the same). On by
	// default.
	PVSpin bool
	// Stats turns the per-acquisition counting of the locks' fast paths on
	// or off. On by default. Slow-path events (halts, kicks, halt
	// timeouts, lost wake-ups, ...) and the vCPUs' halt/kick counts are
	// always kept: they cost nothing next to a wait, and the halt watchdog
	// relies on them.
	Stats bool
	// HaltTimeout is the watchdog bound of one halt (DefaultHaltTimeout by
	// default); <= 0 means halts never time out.
	HaltTimeout time.Duration
	// HaltPoll bounds how long a PV lock's halted vCPU polls before it
	// sleeps, after KVM's halt_poll_ns (0 turns halt-polling off, and a
	// negative bound counts as 0). With HaltPollAdaptive each vCPU grows
	// and shrinks its own window between 0 and HaltPoll from how long its
	// recent halts lasted (KVM's rules: grow when the kick came soon after
	// the poll gave up, shrink when it came after HaltPoll); without it
	// every poll may last HaltPoll. Either way a vCPU polls only while its
	// CPU would otherwise idle: no other vCPU homed there is runnable. The
	// default is adaptive with a 200 µs ceiling (kick.DefaultHaltPoll).
	// Goroutines that are not vCPUs never halt-poll: they park. HaltPoll
	// also bounds the watch of a lock's oldest passive waiter (concurrency
	// restriction): a vCPU whose CPU would idle otherwise, or a goroutine
	// of a program with no more Ps than CPUs, watches the lock instead of
	// halting until no look has found it free for HaltPoll; 0 turns
	// watching off as well.
	HaltPoll time.Duration
	// HaltPollAdaptive lets each vCPU adapt its halt-poll window (see
	// HaltPoll).
	HaltPollAdaptive bool
	// DirectedYield turns the directed yield of the waiting policy on or
	// off (on by default): off, a vCPU that kicks a sleeping waiter homed
	// on its own CPU goes on running, and the waiter waits for the
	// scheduler.
	DirectedYield bool
	// Restrict turns the PV locks' concurrency restriction on or off (on
	// by default): while a lock is saturated, only a few waiters (one
	// goroutine, or one vCPU per other CPU) wait in the lock itself, and
	// the others wait outside it, halted or parked, until a release lets
	// them in (see the README's "Concurrency restriction"). Off, every
	// waiter takes a ticket or queues, as the kernel's locks do. The
	// locks' NoRestriction option turns it off for one lock.
	Restrict bool
	// YieldSlice is how long a vCPU that shares its CPU runs after a
	// preemption before VCPU.CondRelock yields for it (DefaultYieldSlice
	// by default); <= 0 turns these yields off, leaving only explicit
	// requests (VCPU.RequestYield).
	YieldSlice time.Duration
}

// The policy is stored once: HaltPoll and HaltPollAdaptive in kick
// (kick.SetHaltPoll), every other field in lockcore under its own name
// (Stats as lockcore.StatsOn).

// CurrentPolicy returns the policy in force.
func CurrentPolicy() Policy {
	poll, adaptive := kick.HaltPoll()
	return Policy{
		PVSpin:           lockcore.PVSpin.Load(),
		Stats:            lockcore.StatsOn.Load(),
		HaltTimeout:      time.Duration(lockcore.HaltTimeout.Load()),
		HaltPoll:         poll,
		HaltPollAdaptive: adaptive,
		DirectedYield:    lockcore.DirectedYield.Load(),
		Restrict:         lockcore.Restrict.Load(),
		YieldSlice:       time.Duration(lockcore.YieldSlice.Load()),
	}
}

// SetPolicy puts p in force. Each field is set on its own, so callers that
// change a policy concurrently should each change only the fields they own
// (read with CurrentPolicy, change, set).
func SetPolicy(p Policy) {
	lockcore.PVSpin.Store(p.PVSpin)
	lockcore.StatsOn.Store(p.Stats)
	lockcore.HaltTimeout.Store(int64(p.HaltTimeout))
	kick.SetHaltPoll(p.HaltPoll, p.HaltPollAdaptive)
	lockcore.DirectedYield.Store(p.DirectedYield)
	lockcore.Restrict.Store(p.Restrict)
	lockcore.YieldSlice.Store(int64(p.YieldSlice))
}
