package lockcore

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
)

// Concurrency restriction (Dice's Malthusian locks, Dice and Kogan's GCR,
// the single spinner of Go's sync.Mutex and runtime lock).
//
// A saturated lock needs only its holder and a few running waiters: the
// waiter that takes the lock next, and nobody else. Every further waiter
// costs something and gains nothing. Spinning, it pulls the lock's and the
// data's cache lines away from the holder; queued in a FIFO lock while its
// vCPU is not running, it turns every hand-off into a wake-up.
//
// A Gate sits in front of a lock's slow path and splits the waiters in
// two. The active ones, at most the gate's cap, enter the lock's own slow
// path: they take a ticket, queue, spin and halt as the lock's protocol
// says, unchanged. The passive ones wait outside, in the gate's own FIFO,
// with no ticket taken and no queue node linked; they halt (a vCPU, with
// the halt-polling policy) or park (a goroutine). The cap is one waiter
// for a goroutine, as with Go's single spinner, and one less than the
// number of CPUs for a vCPU: with the holder running on one CPU, one
// running waiter on each other CPU is all a lock can use.
//
// Passive waiters are let in ("admitted") in FIFO order, by the unlocker:
//
//   - drained: a release that finds no active waiter admits the oldest
//     passive one. While an active waiter exists, or an admitted one is on
//     its way in, releases wake nobody.
//   - fair: a release that finds active waiters admits the oldest passive
//     waiter if nobody was admitted for FairBound (sync.Mutex's starvation
//     threshold), so that the oldest is admitted within about FairBound
//     even if the active set never drains. The release looks at the clock
//     with probability 1/fairCheck only, so that the bound costs a
//     saturated lock's releases next to nothing.
//
// Restriction engages only when the lock is saturated: a waiter goes
// passive only if it finds cap active waiters already, that is, the lock
// held and every CPU's share of waiting taken; on a lock that is often
// free nobody goes passive and the gate costs one atomic on the way into
// the slow path and one on the way out.
//
// Admission and its race with a passive waiter that is about to halt is
// the ticket lock's halt protocol once more: the waiter counts itself
// passive (a CAS of the gate's state), takes a passive ticket, publishes
// itself under (gate, ticket), re-checks, and halts; the admitter counts it
// out (another CAS of the state), moves the head ticket on, then kicks
// whoever is published under the old head.
// A release that might have missed the new passive waiter is caught by the
// waiter's own re-check of the lock (Gated.Free), after its mark
// (Gated.MarkPassive): see Gate.wait.

// The gate's state word:
//
//	31                              12  11   10              0
//	+---------------------------------+----+-----------------+
//	| passive: waiters outside        | W  | active waiters  |
//	+---------------------------------+----+-----------------+
//
//	active   waiters in the lock's own slow path
//	W        woken: a passive waiter was admitted and is on its way in.
//	         While it is set, releases admit nobody (sync.Mutex's
//	         mutexWoken); the admitted waiter clears it as it becomes
//	         active.
//	passive  waiters outside, counted before they take a passive ticket
const (
	activeBits           = 11
	activeMask    uint32 = 1<<activeBits - 1
	wokenBit      uint32 = 1 << activeBits
	passiveShift         = activeBits + 1
	passiveOne    uint32 = 1 << passiveShift
	maxActive            = activeMask
	maxPassiveNum        = 1<<(32-passiveShift) - 1
)

// FairBound is the restriction's fairness bound: while the active set
// does not drain, a release admits the oldest passive waiter once nobody
// has been admitted for FairBound. It is a variable so that tests can move
// it.
var FairBound = int64(time.Millisecond)

// fairCheck: a release that finds active waiters looks at the clock with
// probability 1/fairCheck.
const fairCheck = 16

// vcpuActive is the cap of active waiters that are vCPUs: one per CPU other
// than the holder's.
var vcpuActive = uint32(max(1, min(runtime.NumCPU()-1, int(maxActive))))

// goroutineActive is the cap of active waiters that are ordinary
// goroutines: one spinner, as Go's sync.Mutex and runtime lock keep.
const goroutineActive = 1

// Gated is what a Gate needs of its lock.
type Gated interface {
	// MarkPassive makes sure that the lock's next releases run the
	// lock's slow unlock, which calls Gate.Released; it is called after a
	// passive waiter counted itself, and before it re-checks Free. A lock
	// whose every release looks at the gate (Gate.Waiting) does nothing.
	MarkPassive()
	// Free reports whether the lock is free, with a sequentially
	// consistent load.
	Free() bool
}

// GateEvents are the indexes, in a lock's Stats, of the events a Gate
// counts.
type GateEvents struct {
	Passive         int // PassiveWaits: waits as a passive waiter
	PassiveHalts    int // halts of passive waiters
	PassiveSpurious int // wake-ups of a passive waiter that was not admitted
	PassiveKicks    int // admissions that kicked a published passive waiter
	AdmittedDrain   int // admissions by a release that found no active waiter
	AdmittedFair    int // admissions by the fairness bound
	Halt            HaltEvents
}

// Gate is the concurrency restriction of one lock; the zero Gate is ready.
// A lock embeds it and calls Enter on its slow path, Leave once it holds
// the lock, and Released after every release that Waiting, or its own
// mark, sends there.
type Gate struct {
	state atomic.Uint32 // see the layout above
	head  atomic.Uint32 // the next passive ticket to admit
	tail  atomic.Uint32 // the next passive ticket to hand out
	// last is when (Now) a passive waiter was last admitted, or found the
	// gate without passive waiters: the fairness bound counts from it.
	last atomic.Int64
}

// passiveWaiters holds the halted passive waiters of every gate, keyed by
// (gate, passive ticket).
var passiveWaiters kick.Table

// Waiting reports whether passive waiters wait at the gate: one load,
// small enough for an inlined unlock path.
func (g *Gate) Waiting() bool { return g.state.Load() >= passiveOne }

// Active returns the number of active waiters.
func (g *Gate) Active() uint32 { return g.state.Load() & activeMask }

// Passive returns the number of passive waiters.
func (g *Gate) Passive() uint32 { return g.state.Load() >> passiveShift }

// capacity returns the cap of active waiters that applies to the calling
// waiter w: a vCPU's or a goroutine's. There is no cap if restricted is
// false, if the policy turned restriction off, or if PV locks may not halt
// (a passive waiter halts).
// A goroutine that Enters with passive set gets no active place at all:
// it waits outside whenever the lock is held (EnterPassive).
func capacity(w *kick.Waiter, restricted, passive bool) uint32 {
	switch {
	case !restricted || !Restrict.Load() || !PVSpin.Load():
		return maxActive
	case w != nil && Of(w) != nil:
		return vcpuActive
	case passive:
		return 0
	}
	return goroutineActive
}

// Enter admits the caller to the lock's slow path: at once if the active
// set has room (or restricted is false), else after a passive wait. It
// reports whether restriction applies to the caller (its lock asked for
// it, and the policy allows it): only then may the caller Demote itself.
// Every Enter is followed by one Leave, with or without Demotes between.
func (g *Gate) Enter(lk Gated, st *Stats, ev *GateEvents, restricted bool) bool {
	return g.enter(lk, st, ev, capacity(kick.Current(), restricted, false))
}

// EnterPassive is Enter for a caller that has already found its way
// barred once, a reader of an RWLock that found a writer: a goroutine
// (not a vCPU) waits outside whenever the lock is held, and is admitted
// by the release, as a reader of sync.RWMutex sleeps until the writer's
// Unlock. Its goroutine's processor meanwhile runs the lock's holder, on
// a warm cache and without a second CPU writing the lock's line. A vCPU
// enters as with Enter.
func (g *Gate) EnterPassive(lk Gated, st *Stats, ev *GateEvents, restricted bool) bool {
	return g.enter(lk, st, ev, capacity(kick.Current(), restricted, true))
}

// enter is Enter with the cap of active waiters that applies to the
// caller.
func (g *Gate) enter(lk Gated, st *Stats, ev *GateEvents, limit uint32) bool {
	for {
		s := g.state.Load()
		// step: gate-enter
		if s&activeMask < limit || s>>passiveShift >= maxPassiveNum {
			if g.state.CompareAndSwap(s, s+1) {
				return limit != maxActive
			}
			continue
		}
		if g.state.CompareAndSwap(s, s+passiveOne) {
			if s < passiveOne {
				g.last.Store(Now()) // the first to wait: the bound starts now
			}
			break
		}
	}
	g.wait(lk, st, ev)
	return true
}

// Leave takes the caller out of the active set: it holds the lock now.
func (g *Gate) Leave() {
	// step: gate-leave
	g.state.Add(^uint32(0))
}

// Demote turns an active caller into a passive one and waits until it is
// admitted again: a waiter of a lock with stealing that found the lock
// taken for its whole spin waits outside rather than spin on.
func (g *Gate) Demote(lk Gated, st *Stats, ev *GateEvents) {
	// step: gate-demote
	if g.state.Add(passiveOne-1)>>passiveShift == 1 {
		g.last.Store(Now()) // the only passive waiter: the bound starts now
	}
	g.wait(lk, st, ev)
}

// wait is the passive wait of a caller that has just counted itself
// passive.
func (g *Gate) wait(lk Gated, st *Stats, ev *GateEvents) {
	// step: gate-ticket
	p := g.tail.Add(1) - 1
	w := kick.Get()
	defer kick.Put(w)
	slot := w.Slot
	st.Inc(slot, ev.Passive)
	// Lost wakeup, gate: the release that frees the lock must look at the
	// gate. A lock that looks only when marked is marked now, after our
	// count in the gate's state and before the re-check below.
	// step: gate-mark
	lk.MarkPassive()
	key := Key(g)
	for {
		// Lost wakeup, arm: arm before publishing, so that the admitter's
		// kick, sent once it finds us published, is never erased.
		// step: gate-arm
		w.Arm()
		// step: gate-publish
		passiveWaiters.Publish(w, key, uint64(p))
		// Lost wakeup, gate: our count (gate-enter) and mark come before
		// this load of the lock word, and a release is an atomic RMW
		// followed by its look at the gate. Either that release saw us,
		// or this load sees it: a free lock, which nobody may be left to
		// admit us to, so we admit the oldest passive waiter ourselves.
		// A lock held by someone else is released later, and that
		// release sees us.
		// step: gate-recheck
		if stillFree(lk) {
			g.admit(slot, st, ev, ev.AdmittedDrain, false)
		}
		// step: gate-admitted
		if g.admitted(p) {
			break
		}
		st.Inc(slot, ev.PassiveHalts)
		// step: gate-halt
		Halt(st, w, ev.Halt, func() bool { return g.admitted(p) })
		if g.admitted(p) {
			break
		}
		passiveWaiters.Withdraw(w)
		st.Inc(slot, ev.PassiveSpurious)
	}
	passiveWaiters.Withdraw(w)
	// Woken to active: our admitter set W and counted us out of the
	// passive waiters; we count ourselves in as active and clear W, so
	// that releases may admit the next one.
	// step: gate-active
	g.state.Add(^(wokenBit - 2)) // adds 1 - wokenBit
}

// freePolls is how many times a passive waiter that found its lock free
// looks again before it admits a waiter itself, freeStride pauses apart:
// about a microsecond here, in which the lock's line is taken from its
// running users only freePolls times.
const (
	freePolls  = 4
	freeStride = ShortSpin / freePolls
)

// stillFree reports whether lk is free and stays free for freePolls polls.
// A lock that is taken meanwhile was taken after the caller counted
// itself passive, so its release will see the caller: on a saturated lock,
// whose running lockers take it again within nanoseconds of a release,
// the passive waiter then halts instead of admitting itself to spin in
// vain.
func stillFree(lk Gated) bool {
	for i := 0; i < freePolls; i++ {
		if !lk.Free() {
			return false
		}
		relax.Pause(freeStride)
	}
	return true
}

// admitted reports whether passive ticket p has been admitted: the head
// has moved past it. Tickets wrap; fewer than 2^31 tickets are ever handed
// out ahead of one that is still waiting.
func (g *Gate) admitted(p uint32) bool { return int32(g.head.Load()-p) > 0 }

// Released is the gate's part of a release, called by the unlocker after
// the lock was released (never before: see Gate.wait) whenever Waiting
// reports true or the lock's mark sent the release to its slow path. It
// admits the oldest passive waiter if no active waiter is left (drained),
// or by the fairness bound, and reports whether passive waiters remain.
func (g *Gate) Released(st *Stats, ev *GateEvents) bool {
	s := g.state.Load()
	switch {
	case s < passiveOne:
		return false
	case s&wokenBit != 0:
		return true // the admitted waiter is on its way: admit nobody
	case s&activeMask == 0:
		// step: gate-admit-drained
		return g.admit(-1, st, ev, ev.AdmittedDrain, false)
	case rand.Uint32N(fairCheck) == 0 && Now()-g.last.Load() >= FairBound:
		// step: gate-admit-fair
		return g.admit(-1, st, ev, ev.AdmittedFair, true)
	}
	return true
}

// admit admits the oldest passive waiter, if there is one, none is on its
// way in already (W) and (unless fair) no active waiter is left, and
// reports whether passive waiters remain. The state CAS counts it out of
// the passive waiters and sets W before the head moves past its ticket,
// so that no second admission can start while it is on its way.
func (g *Gate) admit(slot int, st *Stats, ev *GateEvents, cause int, fair bool) bool {
	for {
		s := g.state.Load()
		if s < passiveOne {
			return false
		}
		if s&wokenBit != 0 || !fair && s&activeMask != 0 || s&activeMask == maxActive {
			return true // one is on its way in, or the active set has not drained
		}
		// step: gate-admit
		if g.state.CompareAndSwap(s, s-passiveOne+wokenBit) {
			break
		}
	}
	// step: gate-head
	h := g.head.Add(1) - 1
	g.last.Store(Now())
	st.Inc(slot, cause)
	// A waiter not yet published re-checks after publishing and sees the
	// head past its ticket; one published is kicked here.
	// step: gate-kick
	if w, _, _ := passiveWaiters.KickWaiter(Key(g), uint64(h)); w != nil {
		st.Inc(slot, ev.PassiveKicks)
	}
	return g.state.Load() >= passiveOne
}
