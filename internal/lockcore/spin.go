package lockcore

import (
	"runtime"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
)

// The waiting policy of PV waiters on vCPUs, in three parts (a vCPU
// waiting for a lock with stealing spins its steal spin, Spinner.stealSpin,
// and a goroutine that is not a vCPU only ShortSpin).
//
// Spinning. A waiter spins for its lock's threshold while its CPU has
// nothing else to run: the CPU would idle anyway. Once another vCPU homed on
// the same CPU is runnable (kick.Domain.Contended), every further spin takes
// time from that vCPU, which may be the lock holder or the next waiter; the
// waiter then spins at most its vCPU's sibling window and halts. The window
// adapts per vCPU: it doubles when a spin that went on while a sibling
// waited ended in the lock, and halves when the waiter gave up and halted.
// From 3x on, the waiter spins at least the sibling floor, set by the CPU's
// overcommit (siblingFloor), whatever its window. This is the "spin more
// when undercommitted, less when overcommitted" the PV ticketlock work
// asked for, answered with what the runtime knows.
//
// Halt-polling. A halting vCPU polls its kick word while its CPU would
// otherwise idle, within an adaptive window (kick.SetHaltPoll, KVM's
// halt_poll_ns rules).
//
// Directed yield. A vCPU that kicks a sleeping waiter homed on its own CPU
// gives the CPU away (sched_yield) if the waiter would otherwise queue
// behind it: the woken waiter owns the lock, or is its queue head, and the
// kicker has only workload code left to run. User space has no yield_to;
// on one CPU, sched_yield is the same thing.

const (
	// siblingCheckEvery is how many spins pass between two looks at the
	// spinner's domain: about a microsecond of spinning here.
	siblingCheckEvery = 64
	// minSiblingSpin and maxSiblingSpin bound a vCPU's sibling window.
	minSiblingSpin = siblingCheckEvery
	maxSiblingSpin = DefaultSpinThreshold
	// initialSiblingSpin is a vCPU's sibling window when it starts.
	initialSiblingSpin = minSiblingSpin
	// maxSiblingFloor is the longest sibling floor: about 20 µs of
	// spinning here, the order of the wake-up that a halt puts on the
	// lock's next hand-off.
	maxSiblingFloor = 1024
	// siblingFloorBudget is the sibling floor times the square of the
	// vCPUs per CPU: maxSiblingFloor at 4x.
	siblingFloorBudget = 16 * maxSiblingFloor
)

// siblingFloor returns the least a waiter homed in d spins beside a
// runnable sibling: for n vCPUs per CPU, siblingFloorBudget/n² polls,
// between minSiblingSpin and maxSiblingFloor. That is 1024 polls at 3x and
// 4x, 256 at 8x, and from 16x on minSiblingSpin, where the floor changes
// nothing; below 3x it is minSiblingSpin too.
//
// A waiter that halts for a sibling puts a wake-up on the lock's next
// hand-off if it is next; the adaptive window halves down to
// minSiblingSpin after a few give-ups, and the wake-ups then cost the FIFO
// locks up to a tenth of lockloop's throughput at 4x. The floor keeps such
// a waiter spinning for about a wake-up. Its gain shrinks with n, because
// the waiter is next less often among more waiters, and its cost grows
// with n, because the spin delays every sibling queued for the CPU: so it
// falls as 1/n². At 2x there is no floor: the one sibling is, on a
// saturated lock, often the holder, whose share of the CPU the spin halves.
//
// Measured (README, "The sibling window's floor"): a fixed floor of 1024
// polls gained lockloop 4-9% at 4x, cost the FIFO locks' dbench about 5% at
// 2x, and spread their max/min at 16x from under 50 to 77-165 on ebizzy and
// dbench. This one keeps most of the 4x gain and leaves 2x and 16x as they
// were. Applying it only while two siblings or more were queued measured
// the same at 3x-4x and was dropped.
func siblingFloor(d *kick.Domain) uint32 {
	n := uint32(d.PerCPU())
	if n < 3 {
		return minSiblingSpin
	}
	return budgetSpin(n)
}

// budgetSpin is the sibling floor's budget for n vCPUs per CPU:
// siblingFloorBudget/n² polls, between minSiblingSpin and maxSiblingFloor.
func budgetSpin(n uint32) uint32 {
	return min(maxSiblingFloor, max(minSiblingSpin, siblingFloorBudget/(n*n)))
}

// Spinner paces one spin phase of a PV lock waiter: a PAUSE per spin, an
// acknowledgement of cross-vCPU calls every SpinPollEvery spins, and the
// decision to stop spinning and halt (see the policy above). Goroutines
// that are not vCPUs spin at most ShortSpin, unless the threshold is fixed.
type Spinner struct {
	v         *VCPU // the spinner's vCPU, nil for goroutines that are not vCPUs
	d         *kick.Domain
	n         uint32 // spins so far
	limit     uint32 // the lock's spin threshold
	sibling   uint32 // spins allowed while a sibling waits
	floor     uint32 // least spins beside a sibling (siblingFloor)
	contended bool   // a sibling was seen waiting during this phase
}

// NewSpinner starts a spin phase of at most threshold spins for the
// calling goroutine. With fixed set the phase lasts the whole threshold
// whatever the CPU's load: a lock configured with a fixed threshold.
func NewSpinner(threshold uint32, fixed bool) Spinner {
	s := Spinner{limit: threshold}
	if w := kick.Current(); w != nil {
		if v := Of(w); v != nil {
			s.v = v // for poll, fixed or not
			if !fixed {
				if s.d = w.Domain(); s.d != nil {
					s.floor = siblingFloor(s.d)
				}
				s.sibling = v.sibSpin.Load()
			}
			return s
		}
	}
	if !fixed {
		// A goroutine that is not a vCPU parks cheaply, and its spin takes
		// the P from other goroutines: it spins briefly, as sync.Mutex's
		// waiters do.
		s.limit = min(threshold, ShortSpin)
	}
	return s
}

// ShortSpin is the most a goroutine that is not a vCPU spins, and so the
// spin threshold of such a goroutine waiting for a lock with stealing:
// about a microsecond of spinning here, sync.Mutex's order of active
// spinning. There a waiter that halts early costs nobody a hand-off, since
// running lockers take the lock meanwhile, and on a saturated lock short
// spins leave the lock, and its data, in the running holder's cache. What
// spinning would have caught, halt-polling catches while the CPU would
// idle anyway.
const ShortSpin = 64

// stealSpin sets the spin of a vCPU waiting for a lock with stealing: as
// long as the sibling floor's budget allows for its CPU's overcommit
// (budgetSpin: siblingFloorBudget/n² polls for n vCPUs homed per CPU, at
// most maxSiblingFloor), and never less than ShortSpin. That is 1024
// polls at 2x-4x (about 20 µs, the order of a cross-CPU wake-up), 256 at
// 8x, and ShortSpin from 16x on and for a vCPU alone on its CPU. Beside
// a runnable sibling it still gives way after its sibling window, or the
// sibling floor from 3x on, as a FIFO lock's waiter does. It runs once per
// spin phase, on the slow path: one load of the domain's count.
//
// A vCPU that gives up goes outside the gate and halts; its next turn
// costs a wake-up, and with its siblings outside too its CPU idles
// meanwhile. On ebizzy, whose lockers free and allocate back to back, a
// spin of ShortSpin ended just before the lock came free: pv-qspin ÷
// sync.Mutex at 2x / 3x / 4x, medians of 11 alternated rounds, 1.17 /
// 1.10 / 1.01 with ShortSpin and 1.31 / 1.15 / 1.13 with 1024 polls, the
// lowest round 0.88 against 1.04 at 2x-3x; lockloop at 4x 0.95 and 0.98,
// dbench within its rounds' spread (README, "A vCPU's spin on a lock with
// stealing"). A vCPU alone on its CPU keeps ShortSpin: at 1x, 1024 polls
// took dbench from 1.27 to 0.90 ÷ sync.Mutex (each look takes the lock's
// line from the holder), and a passive waiter there watches the lock
// anyway (Gate.watch). From 16x on the floor is ShortSpin too, which
// leaves heavy overcommit as it was.
//
// Those 11 rounds ran the builds in a fixed order. Re-checked over 20
// rounds with the order alternating, the gain on ebizzy did not reproduce
// (0.99-1.03 paired at 2x-4x) and dbench at 2x-4x was 1-4% down; over 12
// such rounds of lockloop, without the spin pv-qspin lost 4% at 4x and
// fell under 0.95x sync.Mutex there (README, "The serial ceiling"). The
// spin is kept for lockloop, whose cell at 4x has the least margin.
func (s *Spinner) stealSpin() {
	if s.v == nil || s.d == nil {
		return
	}
	if n := uint32(s.d.PerCPU()); n >= 2 {
		s.limit = max(ShortSpin, budgetSpin(n))
	}
}

// Spin spends one spin and reports whether the waiter should go on
// spinning; false means it is time to halt.
func (s *Spinner) Spin() bool {
	s.n++
	if s.n%SpinPollEvery == 0 && s.v != nil {
		s.v.poll() // acknowledge cross-vCPU calls while we spin
	}
	if s.n%SpinPollEvery == 0 {
		CheckSpin()
	}
	if s.n >= s.limit {
		return false
	}
	if s.d != nil && s.n%siblingCheckEvery == 0 && s.d.Contended() {
		s.contended = true
		if s.n >= max(s.sibling, s.floor) {
			s.v.sibSpin.Store(max(s.sibling/2, minSiblingSpin))
			return false
		}
	}
	relax.Pause(1)
	return true
}

// Acquired ends the phase with the lock (or the queue position) won while
// spinning: if a sibling waited meanwhile, spinning on paid off, and the
// vCPU's sibling window grows.
func (s *Spinner) Acquired() {
	if s.contended && s.d != nil {
		s.v.sibSpin.Store(min(max(s.sibling*2, s.n), maxSiblingSpin))
	}
}

// Aware reports whether the spinner sees its CPU's load (it runs on a vCPU
// and its lock has no fixed threshold). A spinner that does not spins
// blindly for the whole threshold.
func (s *Spinner) Aware() bool { return s.d != nil }

// OnVCPU reports whether the spinner is a vCPU.
func (s *Spinner) OnVCPU() bool { return s.v != nil }

// Spins returns the number of spins so far.
func (s *Spinner) Spins() uint32 { return s.n }

// YieldTo gives the CPU to a waiter that was just kicked out of its sleep
// (see the policy above): if w is homed on the calling vCPU's CPU and
// another vCPU there is runnable, the caller yields. A parked goroutine's
// wake-up queues it on the caller's own P, behind the caller, so there the
// caller yields its P (runtime.Gosched), as sync.Mutex's hand-off does.
// Lock slow paths call it after the release.
func YieldTo(w *kick.Waiter) {
	if !DirectedYield.Load() {
		return
	}
	self := kick.Current()
	if w.Backend() == kick.Park {
		// Not from a vCPU: its goroutine is locked to its thread, and
		// Gosched would cost two thread switches.
		if self == nil {
			runtime.Gosched()
		}
		return
	}
	d := w.Domain()
	if d == nil || !d.Contended() {
		return
	}
	if self != nil && self != w && self.Domain() == d {
		relax.Yield()
	}
}
