package lockcore

import (
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
//     even if the active set never drains. Only one release in fairCheck
//     looks at the clock, picked by the lock's count of its releases, so
//     that the bound costs a saturated lock's releases next to nothing.
//   - deep: once deepPassive waiters or more wait outside (sixteen per
//     CPU: heavy overcommit, never at 16 vCPUs per CPU or fewer), the
//     bound shrinks with the queue, FairBound*deepPassive/n for n waiting
//     outside, and fair admissions stack: a release admits by the bound
//     even while an admitted waiter is still on its way in. An admitted
//     vCPU waits for its turn on a CPU crowded with runnable vCPUs, and
//     with one admission on its way at a time the queue moves one such
//     wait per admission; a deep queue then kept its last waiter outside
//     for most of a second. Stacked, the queue turns over within about
//     deepPassive*FairBound whatever its length. Stacked admissions have
//     their own count (AdmittedStacked); the fair count has the others.
//     On a deep queue a vCPU's turn in the active set is also bounded
//     (Gate.turnOver): once it has run turnCPU of CPU time since its last
//     passive wait, it waits outside at its next slow path even if the
//     active set has room. The passive FIFO gives every vCPU about as
//     many turns; the bound keeps one turn from yielding a hundred times
//     what another does.
//
// or by itself: the oldest passive waiter watches the lock instead of
// halting (Gate.watch) if its CPU would idle otherwise: a vCPU with no
// other vCPU runnable on its CPU, or a goroutine of a program that has no
// more Ps than CPUs. While it watches, releases leave the gate alone; it
// lets itself in once it finds the lock left free, and keeps the fairness
// bound itself. A saturated lock then stays with its running holder, and
// its data in that CPU's cache, up to the fairness bound, and the holder's
// releases cost what they cost with nobody waiting.
//
// Every admission is a swap for vCPUs (Dice's Malthusian culling): it
// sets C, and the next vCPU that would enter the active set goes passive
// instead, at the back of the queue, as long as others wait outside (and
// fewer than four per CPU: cullMaxPassive). The vCPUs that run and take
// the lock again and again are so sent outside in turn, at the rate
// passive ones are let in, and the lock circulates over all of them.
// Without it, the vCPUs of the CPU that runs fastest (the host's own load
// can slow one CPU to half the other's) win the race for the active place
// each time and keep it, and the other CPU's vCPUs wait outside, admitted
// one per fairness bound. One admission is no swap: a release's, whose
// waiter sleeps on the releaser's own CPU, while the lock's waiters have
// work outside it (Gate.besideReleaser, Gate.workOutside). That waiter
// cannot run before the releaser's time slice ends, and until it does, a
// running vCPU on another CPU is the only one that can use the room.
//
// Restriction engages only when the lock is saturated: a waiter goes
// passive only if it finds cap active waiters already, that is, the lock
// held and every CPU's share of waiting taken, or if C culls it, which
// needs others outside already; on a lock that is often
// free nobody goes passive and the gate costs one atomic on the way into
// the slow path and one on the way out, and a vCPU's entry one more, the
// count that Gate.workOutside reads.
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
//	31                      14  13   12   11   10              0
//	+-------------------------+----+----+----+-----------------+
//	| passive: waiters outside| C  | X  | W  | active waiters  |
//	+-------------------------+----+----+----+-----------------+
//
//	active   waiters in the lock's own slow path
//	W        woken: a passive waiter was admitted and is on its way in.
//	         While it is set, releases admit nobody (sync.Mutex's
//	         mutexWoken); the admitted waiter clears it as it becomes
//	         active.
//	X        watching: the oldest passive waiter runs on a CPU that would
//	         idle otherwise and watches the lock (Gate.watch). While it is
//	         set, releases leave the gate alone (Waiting reports false):
//	         the watcher lets itself in once the lock stays free, so a
//	         lock that its running holder takes again at once stays on the
//	         holder's CPU, and it admits itself by the fairness bound. X is
//	         set by a CAS that finds it clear, and cleared only by the
//	         waiter that set it (Gate.unwatch), which then marks the lock
//	         and looks at it for the releases it turned away.
//	C        cull: a passive waiter was admitted, and the next vCPU that
//	         finds room in the active set goes passive instead (it clears
//	         C in the CAS that counts it passive; goroutines pay no heed
//	         to C). An admission sets C if passive waiters remain, fewer
//	         than cullMaxPassive, and clears it otherwise, so C is set
//	         only while some wait outside.
//	passive  waiters outside, counted before they take a passive ticket
const (
	activeBits           = 11
	activeMask    uint32 = 1<<activeBits - 1
	wokenBit      uint32 = 1 << activeBits
	watchBit      uint32 = wokenBit << 1
	cullBit       uint32 = watchBit << 1
	passiveShift         = activeBits + 3
	passiveOne    uint32 = 1 << passiveShift
	maxActive            = activeMask
	maxPassiveNum        = 1<<(32-passiveShift) - 1
)

// FairBound is the restriction's fairness bound: while the active set
// does not drain, a release admits the oldest passive waiter once nobody
// has been admitted for FairBound. It is a variable so that tests can move
// it.
var FairBound = int64(time.Millisecond)

// deepPassive is how many passive waiters make a deep queue, for which
// the fairness bound shrinks and fair admissions stack (fairBound,
// Gate.Released): sixteen per CPU, more than 16x overcommit can put
// outside.
var deepPassive = uint32(16 * runtime.NumCPU())

// fairBound returns the fairness bound, in nanoseconds, for n passive
// waiters: FairBound, or for a deep queue FairBound*deepPassive/n, so that
// the whole queue is admitted within about deepPassive*FairBound.
func fairBound(n uint32) int64 {
	if n < deepPassive {
		return FairBound
	}
	return FairBound * int64(deepPassive) / int64(n)
}

// fairCheck: one release in fairCheck that finds active waiters looks at
// the clock, picked by the lock's count of its releases (Released's seq).
// A random pick costs more: math/rand/v2's generator took a third of the
// time of Go's slack Mutex shape at 8 Ps (pv-ticket 34 ns/op with it, 24
// without; README, "The fairness clock's sample").
const fairCheck = 16

// turnCPU bounds a vCPU's turn in the active set on a deep queue: the CPU
// time its thread may run from the end of one passive wait to the slow
// path that sends it outside again (Gate.turnOver). At 128 vCPUs per CPU
// the passive FIFO gave every vCPU of lockloop 6-14 turns a second, but
// one turn yielded one acquisition and another 180, after the CPU time
// the guest's scheduler gave each while it was in. lockloop's max/min,
// medians over 4 alternated rounds for the three PV locks: 26-181 without
// the bound, 7.0-9.3 with it (README, "Turns by CPU time"). Wall time
// does not measure it: a vCPU waits for its CPU for most of a turn at
// that depth. The clock is a system call, read only on a deep queue.
const turnCPU = int64(100 * time.Microsecond)

// vcpuActive is the cap of active waiters that are vCPUs: one per CPU other
// than the holder's.
var vcpuActive = uint32(max(1, min(runtime.NumCPU()-1, int(maxActive))))

// cullMaxPassive is how many passive waiters may remain after an
// admission for it to be a swap (C): fewer than four per CPU. With more
// outside, the passive FIFO itself takes nearly every vCPU through its
// turn, and a swap only adds an admission of a vCPU that is not running.
var cullMaxPassive = uint32(4 * runtime.NumCPU())

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
	AdmittedStack   int // fair admissions on a deep queue made while another admitted waiter was on its way in
	Watches         int // passive waits that watched the lock (Gate.watch)
	Culled          int // passive waits of vCPUs that C, or the end of their turn, sent outside (Gate.enter)
	Beside          int // admissions by a release that would have set C but left it clear, their waiter asleep on the releaser's CPU (Gate.besideReleaser)
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
	// stacked counts the admissions made while W was set (a deep queue's
	// fair admissions) whose waiters have not become active yet. An
	// admitted waiter that finds one takes it rather than clear W, so
	// that W is cleared by the last of them to arrive. It fills the four
	// bytes before last: a Gate is 24 bytes, as it was without it.
	stacked atomic.Uint32
	// last is when (Now) a passive waiter was last admitted, or found the
	// gate without passive waiters: the fairness bound counts from it.
	last atomic.Int64
}

// passiveWaiters holds the halted passive waiters of every gate, keyed by
// (gate, passive ticket).
var passiveWaiters kick.Table

// Waiting reports whether a release must call Released: passive waiters
// wait at the gate, and none of them watches the lock (X), which leaves
// the releases nothing to do. It is one load, small enough for an inlined
// unlock path.
func (g *Gate) Waiting() bool {
	s := g.state.Load()
	return s >= passiveOne && s&watchBit == 0
}

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
	w := kick.Current()
	return g.enter(lk, w, st, ev, capacity(w, restricted, false))
}

// culls reports whether a caller whose cap of active waiters is limit, and
// whose waiter is w, takes part in the swaps of admissions (C): a vCPU
// under restriction.
func culls(w *kick.Waiter, limit uint32) bool {
	return limit != maxActive && w != nil && Of(w) != nil
}

// turnOver reports whether a caller with waiter w, whose cap of active
// waiters is limit, and which finds the gate in state s with room in the
// active set, is a vCPU under restriction at the end of its turn: the
// queue is deep (deepPassive waiters outside or more), and its thread has
// run turnCPU of CPU time since its last passive wait ended there. Such a
// vCPU goes outside, as C sends one, and its re-check (gate-recheck)
// keeps a release from passing it by.
func turnOver(s uint32, w *kick.Waiter, limit uint32) bool {
	if n := s >> passiveShift; n < deepPassive || n >= maxPassiveNum || limit == maxActive {
		return false
	}
	v := Of(w)
	if v == nil {
		return false
	}
	start := v.turn.Load()
	return start != 0 && threadCPU()-start >= turnCPU
}

// turnStart returns the start of a vCPU's turn for a passive wait that
// ends with the gate in state s: its thread's CPU time on a deep queue,
// else 0, which leaves the turn unbounded.
func turnStart(s uint32) int64 {
	if s>>passiveShift < deepPassive {
		return 0
	}
	return threadCPU()
}

// EnterPassive is Enter for a caller that has already found its way
// barred once, a reader of an RWLock that found a writer: a goroutine
// (not a vCPU) waits outside whenever the lock is held, asleep (it does
// not watch), and is admitted by the release, as a reader of sync.RWMutex
// sleeps until the writer's Unlock. Its goroutine's processor meanwhile
// runs the lock's holder, on a warm cache and without a second CPU
// writing the lock's line. A vCPU enters as with Enter.
func (g *Gate) EnterPassive(lk Gated, st *Stats, ev *GateEvents, restricted bool) bool {
	w := kick.Current()
	return g.enter(lk, w, st, ev, capacity(w, restricted, true))
}

// enter is Enter for the caller whose waiter (kick.Current) is w, with the
// cap of active waiters that applies to it.
func (g *Gate) enter(lk Gated, w *kick.Waiter, st *Stats, ev *GateEvents, limit uint32) bool {
	var s, x, c uint32
	var over bool
	if culls(w, limit) {
		outsideOf(g).enters.Add(1) // Gate.workOutside
	}
	for {
		s = g.state.Load()
		c, over = 0, false
		// step: gate-enter
		if s&activeMask < limit || s>>passiveShift >= maxPassiveNum {
			// Room, but a vCPU whose turn is over goes outside, leaving
			// C as it is. Lost wakeup, turn: we may go passive with no
			// active waiter and the lock about to be free; our re-check
			// (gate-recheck) finds it free and admits, and a release after
			// our count sees us. The deep queue (others outside) is the
			// policy's condition, not the race's: the model verifies the
			// turn's end with nobody outside too.
			// step: gate-turn
			over = turnOver(s, w, limit)
			if !over && (s&cullBit == 0 || s>>passiveShift >= maxPassiveNum || !culls(w, limit)) {
				if g.state.CompareAndSwap(s, s+1) {
					return limit != maxActive
				}
				continue
			}
			if !over {
				// Room, but C sends us outside, and we take C back in
				// the CAS that counts us passive. Lost wakeup, cull: we
				// may go passive with no active waiter and the lock about
				// to be free, but C is set only while others wait outside
				// (Gate.admit); each of them takes the lock in turn, and
				// its release sees us. Our re-check (gate-recheck) covers
				// the rest, as for any passive waiter.
				// step: gate-cull
				c = cullBit
			}
		}
		x = 0
		if limit != 0 {
			x = g.firstWatch(s, w)
		}
		if g.state.CompareAndSwap(s, s-c+passiveOne|x) {
			break
		}
	}
	if c != 0 || over {
		st.Inc(w.Slot, ev.Culled) // C, or the end of its turn, sent it outside
	}
	if s < passiveOne {
		g.last.Store(Now()) // the first to wait: the bound starts now
	}
	// A goroutine with no active place (EnterPassive) sleeps; it never
	// watches.
	g.wait(lk, st, ev, x != 0, limit != 0)
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
	w := kick.Current()
	var s, x uint32
	for {
		s = g.state.Load()
		x = g.firstWatch(s, w)
		// step: gate-demote
		if g.state.CompareAndSwap(s, s+passiveOne-1|x) {
			break
		}
	}
	if s < passiveOne {
		g.last.Store(Now()) // the only passive waiter: the bound starts now
	}
	g.wait(lk, st, ev, x != 0, true)
}

// firstWatch returns X if a caller with waiter w that finds the gate in
// state s and is about to count itself passive will be the oldest passive
// waiter, may watch (canWatch) and finds X clear (a watcher admitted a
// moment ago may not have cleared it yet); else 0. Setting X in the
// counting CAS itself leaves no moment in which a release could admit it
// before it watches.
func (g *Gate) firstWatch(s uint32, w *kick.Waiter) uint32 {
	if s&^(activeMask|wokenBit|cullBit) == 0 && canWatch(w) {
		return watchBit
	}
	return 0
}

// canWatch reports whether a passive waiter with waiter w may watch the
// lock rather than halt (Gate.watch): halt-polling is on, and the waiter's
// CPU would idle otherwise. For a vCPU, that is when no other vCPU is
// runnable on its CPU. For a goroutine that is not a vCPU, it is when its
// program has no more Ps (GOMAXPROCS) than CPUs: then its P has a CPU of
// its own, and the watcher takes CPU time from no goroutine of its
// program; it yields its P between looks to any goroutine that is
// runnable there.
func canWatch(w *kick.Waiter) bool {
	if window, _ := kick.HaltPoll(); window <= 0 {
		return false
	}
	if w == nil || Of(w) == nil {
		return runtime.GOMAXPROCS(0) <= runtime.NumCPU()
	}
	d := w.Domain()
	return d != nil && !d.Contended()
}

// wait is the passive wait of a caller that has just counted itself
// passive, and set X if watching; mayWatch false keeps a caller that did
// not from watching later.
func (g *Gate) wait(lk Gated, st *Stats, ev *GateEvents, watching, mayWatch bool) {
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
		if stillFree(lk, freePolls) {
			g.admit(w, p, st, ev, ev.AdmittedDrain, false, false)
		}
		// step: gate-admitted
		if g.admitted(p) {
			break
		}
		// step: gate-watch
		admitted := (watching || mayWatch) && g.watch(lk, w, p, st, ev, watching)
		watching = false // X is not ours once watch returns
		if admitted {
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
	// Lost wakeup, watch: X set as we counted ourselves passive is ours
	// to clear even if we were admitted before we watched (an admission
	// whose CAS came before our count passed our ticket): releases leave
	// the next passive waiter outside until we take it back.
	// step: gate-watch-drop
	if watching {
		g.unwatch(lk, w, p, st, ev)
	}
	passiveWaiters.Withdraw(w)
	if v := Of(w); v != nil {
		v.turn.Store(turnStart(g.state.Load())) // its turn starts (Gate.turnOver)
	}
	g.becomeActive()
}

// becomeActive counts an admitted waiter in as active, and clears W if it
// is the last of the admitted waiters on their way in.
func (g *Gate) becomeActive() {
	// Our admitter counted us out of the passive waiters and set W, or,
	// on a deep queue, stacked us (gate-stack). W stands for one waiter
	// on its way in and each stacked count for one more; which of them
	// arrives first does not matter. Lost wakeup, stack: the count is
	// raised before the head moves past a stacked waiter's ticket, so a
	// waiter that finds no count finds W set. The last to arrive clears
	// W, so that releases may admit the next one.
	d := ^(wokenBit - 2) // adds 1 - wokenBit
	// step: gate-token
	for k := g.stacked.Load(); k != 0; k = g.stacked.Load() {
		if g.stacked.CompareAndSwap(k, k-1) {
			d = 1 // W stays for the others on their way in
			break
		}
	}
	// step: gate-active
	g.state.Add(d)
}

// freePolls is how many times a passive waiter that found its lock free
// looks again before it admits a waiter itself, one pause apart: about a
// microsecond here. A holder that takes the lock again takes it within
// that, its own gap plus one cross-CPU transfer of the line (0.3-2 µs
// here); a lock left free that long has been left alone.
const freePolls = 32

// watchFreePolls is freePolls for a watcher (Gate.watch), whose look must
// find the lock free for about 4 µs before it lets itself in. The watch
// keeps a saturated lock with its running holder, and a holder whose
// critical sections come a microsecond or two apart (ebizzy's allocator:
// a free, a copy, the next allocation) left the lock free for freePolls
// between them: the watcher came in, and two CPUs then took turns with
// the lock and its data. At 1x, alternated with freePolls, ebizzy went
// from 0.77-1.24x sync.Mutex to 1.03-1.34x, dbench from 1.13-1.23x to
// 1.24-1.36x, and lockloop, whose holders leave the lock alone for tens
// of microseconds, stayed at 0.98-1.01x.
const watchFreePolls = 4 * freePolls

// stillFree reports whether lk is free and stays free for polls polls.
// A lock that is taken meanwhile was taken after the caller counted
// itself passive, so its release will see the caller: on a saturated lock,
// whose running lockers take it again within nanoseconds of a release,
// the passive waiter then halts instead of admitting itself to spin in
// vain.
func stillFree(lk Gated, polls int) bool {
	for i := 0; i < polls; i++ {
		if !lk.Free() {
			return false
		}
		relax.Pause(1)
	}
	return true
}

// watchInterval is how long a watcher (Gate.watch) lets pass between two
// looks at the lock, in nanoseconds: each look takes the lock's cache line
// from its running holder, which pays a cross-CPU transfer (0.3-2 µs here)
// at its next write, so the looks are kept a few percent of its time.
const watchInterval = int64(20 * time.Microsecond)

// watch is the passive wait of the oldest passive waiter p whose CPU
// would idle otherwise (canWatch): rather than halt, it watches the lock,
// with X set so that releases leave the gate alone, and lets itself in
// once the lock stays free (stillFree). A saturated lock whose running
// holder takes it again at once so stays on the holder's CPU, its data in
// that CPU's cache, and the holder's releases skip the gate, as
// sync.Mutex's holder runs on while its woken waiter is still on its way;
// a lock its holder leaves alone is taken over within a look. Since X
// turns releases away, the watcher keeps the fairness bound itself: it
// admits itself once nobody has been admitted for FairBound.
//
// The watch ends, X cleared, when the waiter is admitted (by the bound,
// or by its own look), when another vCPU becomes runnable on its CPU, or
// when no look has found the lock free for the halt-poll ceiling
// (pvlock.Policy.HaltPoll, 0 turns watching off): a lock held that long
// is in a long critical section, for which a halt is the better wait.
// The waiter then halts as every passive waiter does. set says that the
// caller set X as it counted itself passive (Gate.firstWatch). It reports
// whether p was admitted.
func (g *Gate) watch(lk Gated, w *kick.Waiter, p uint32, st *Stats, ev *GateEvents, set bool) bool {
	if !set {
		if !canWatch(w) {
			return false
		}
		for {
			s := g.state.Load()
			if s&(watchBit|wokenBit) != 0 || s < passiveOne {
				return false
			}
			// Lost wakeup, watch: a release that read the state before
			// this CAS found X clear and admitted as it would have; one
			// after it finds X and admits nobody, and this watch (or its
			// unwatch's re-check) looks at the lock after it.
			// step: gate-watch-set
			if g.state.CompareAndSwap(s, s|watchBit) {
				break
			}
		}
	}
	// Only the oldest passive waiter watches. A waiter that set X but is
	// not the head (others wait ahead of it, or it was admitted already)
	// takes X back at once.
	if g.head.Load() != p {
		g.unwatch(lk, w, p, st, ev)
		return g.admitted(p)
	}
	d, v := w.Domain(), Of(w)
	window, _ := kick.HaltPoll()
	st.Inc(w.Slot, ev.Watches)
	for lastFree := Now(); ; {
		// Every way out takes X back (unwatch).
		if g.admitted(p) {
			break
		}
		// step: gate-watch-look
		if lk.Free() {
			lastFree = Now()
			if stillFree(lk, watchFreePolls) {
				// step: gate-watch-admit
				g.admit(w, p, st, ev, ev.AdmittedDrain, false, false)
				if g.admitted(p) {
					break
				}
			}
		}
		if Now()-g.last.Load() >= fairBound(g.Passive()) {
			// step: gate-watch-fair
			g.admit(w, p, st, ev, ev.AdmittedFair, true, false)
			if g.admitted(p) {
				break
			}
		}
		if d != nil && d.Contended() || Now()-lastFree >= int64(window) {
			break
		}
		// Between looks only the domain's own line is read: a sibling that
		// becomes runnable ends the watch within a few microseconds.
		for next := Now() + watchInterval; Now() < next && !(d != nil && d.Contended()); {
			relax.Pause(relax.MaxPause)
		}
		if v != nil {
			v.poll() // acknowledge cross-vCPU calls, as a spinner does
		} else {
			runtime.Gosched() // the P's other goroutines run first
		}
		CheckSpin()
	}
	g.unwatch(lk, w, p, st, ev)
	return g.admitted(p)
}

// unwatch clears X, which the caller set, and takes over what the
// releases X turned away would have done: it marks the lock again, and if
// the lock is free, it admits the oldest passive waiter.
func (g *Gate) unwatch(lk Gated, w *kick.Waiter, p uint32, st *Stats, ev *GateEvents) {
	// step: gate-watch-clear
	g.state.And(^watchBit)
	// Lost wakeup, watch mark: while X hid the passive waiters (Waiting),
	// a lock that looks at the gate only when marked (the ticket lock's
	// slowpath flag) may have had its mark cleared by a release; mark it
	// again, after X is cleared and before the re-check below.
	// step: gate-watch-mark
	lk.MarkPassive()
	// Lost wakeup, watch: a release that found X set admitted nobody, and
	// this load of the lock comes after X is cleared: either it sees the
	// lock free, or the lock's next release sees X clear.
	// step: gate-watch-recheck
	if !lk.Free() {
		return
	}
	g.admit(w, p, st, ev, ev.AdmittedDrain, false, false)
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
//
// seq is the lock's own count of its releases (a ticket lock's head, a
// queued lock's release counter), or any number that moves on with each
// release: the releases whose seq is a multiple of fairCheck look at the
// clock for the fairness bound (fairDue).
func (g *Gate) Released(seq uint32, st *Stats, ev *GateEvents) bool {
	s := g.state.Load()
	switch {
	case s < passiveOne:
		return false
	case s&wokenBit != 0:
		// The admitted waiter is on its way: admit nobody, unless the
		// queue is deep and the bound has passed (no watcher keeps it).
		if s>>passiveShift < deepPassive || s&watchBit != 0 || !g.fairDue(seq, s>>passiveShift) {
			return true
		}
		// step: gate-admit-deep
		return g.admit(nil, 0, st, ev, ev.AdmittedFair, true, false)
	case s&watchBit != 0:
		// A watcher (X) looks at the lock itself, keeps the fairness bound
		// itself, and clears X only with a look after it (Gate.unwatch).
		// A release comes here with X set only if it read the state
		// before X was set, or was sent by the lock's mark.
		return true
	case s&activeMask == 0:
		// step: gate-admit-drained
		return g.admit(nil, 0, st, ev, ev.AdmittedDrain, false, g.besideReleaser(seq))
	case g.fairDue(seq, s>>passiveShift):
		// step: gate-admit-fair
		return g.admit(nil, 0, st, ev, ev.AdmittedFair, true, g.besideReleaser(seq))
	}
	return true
}

// fairDue reports whether a release with sequence number seq that finds n
// passive waiters admits one by the fairness bound: one release in
// fairCheck looks at the clock, and the bound for n has passed since the
// last admission.
func (g *Gate) fairDue(seq, n uint32) bool {
	return seq%fairCheck == 0 && Now()-g.last.Load() >= fairBound(n)
}

// admit admits the oldest passive waiter, if there is one, none is on its
// way in already (W) and (unless fair) no active waiter is left, and
// reports whether passive waiters remain. The state CAS counts it out of
// the passive waiters and sets W before the head moves past its ticket,
// so that no second admission can start while it is on its way, except
// a fair one on a deep queue, which stacks: it leaves W as it is and
// counts its waiter in stacked instead (see Gate.becomeActive).
//
// self is the calling passive waiter and own its passive ticket, or nil
// for a release: a waiter that admits itself is not kicked. The admission
// counts the event cause, or ev.AdmittedStack if it stacked.
//
// noSwap says that the admission leaves C clear: a release's, whose
// waiter sleeps on the releaser's own CPU (Gate.besideReleaser). An
// admission that would have set C counts ev.Beside as well.
func (g *Gate) admit(self *kick.Waiter, own uint32, st *Stats, ev *GateEvents, cause int, fair, noSwap bool) bool {
	var stack, skipped bool
	for {
		s := g.state.Load()
		if s < passiveOne {
			return false
		}
		stack = s&wokenBit != 0
		if stack && !(fair && s>>passiveShift >= deepPassive) || !fair && s&activeMask != 0 || s&activeMask == maxActive {
			return true // one is on its way in, or the active set has not drained
		}
		// C: a swap for this admission while others still wait outside,
		// fewer than cullMaxPassive, and unless noSwap; none otherwise.
		// Lost wakeup, cull: C must never outlive the passive waiters (see
		// gate-cull). Leaving C clear closes no race and opens none: a
		// clear C only lets the next entrant into the active set, which
		// the model's set_cull may choose at any admission.
		n := s - passiveOne | wokenBit
		swap := n >= passiveOne && n>>passiveShift < cullMaxPassive
		if swap && !noSwap {
			n |= cullBit
		} else {
			n &^= cullBit
		}
		// step: gate-admit
		if g.state.CompareAndSwap(s, n) {
			skipped = swap && noSwap
			break
		}
	}
	if stack {
		// Lost wakeup, stack: the count goes up before the head moves, so
		// that no waiter can arrive between (gate-token).
		// step: gate-stack
		g.stacked.Add(1)
		cause = ev.AdmittedStack
	}
	// step: gate-head
	h := g.head.Add(1) - 1
	g.last.Store(Now())
	slot := -1
	if self != nil {
		slot = self.Slot
	}
	st.Inc(slot, cause)
	if skipped {
		st.Inc(slot, ev.Beside) // a swap this admission would have made
	}
	if self != nil && h == own {
		return g.state.Load() >= passiveOne // admitted itself: it knows
	}
	// A waiter not yet published re-checks after publishing and sees the
	// head past its ticket; one published is kicked here.
	// step: gate-kick
	if w, _, _ := passiveWaiters.KickWaiter(Key(g), uint64(h)); w != nil {
		st.Inc(slot, ev.PassiveKicks)
	}
	return g.state.Load() >= passiveOne
}

// outsideShare and outsideStay are the shares of a lock's releases that
// its slow-path entries must reach for Gate.workOutside to find work
// outside the lock: one entry in outsideShare releases to turn the verdict
// on, and one in outsideStay to keep it on. Summed over a run, pv-qspin's
// entries per release at 2x-4x were 0.07-0.12 on ebizzy, whose vCPUs work
// between two short critical sections, 0.001-0.028 on dbench, which does
// all its work inside the lock, and 0.013-0.18 on lockloop (README,
// "Admissions beside the releaser").
//
// The verdict's own rule moves its input: each running vCPU it lets into
// the active set takes the lock across CPUs, and the holder's next Lock
// then misses the fast path. With the rule on, dbench's entries rose to
// 0.017-0.043 per release, and a single threshold of 1/20 judged up to a
// third of its admissions parallel. So the verdict, once on, asks for
// more: ebizzy's entries with the rule on were 0.09-0.14.
const (
	outsideShare = 20
	outsideStay  = 12
)

// outsideDecay: at each admission by a release, the sums of Gate.workOutside
// lose 1/outsideDecay of their weight before the last window is added.
// With a decay of 1/8, a few windows of bursts turned dbench's verdict.
const outsideDecay = 32

// outsideWindowMax bounds the releases of one window that Gate.workOutside
// counts: a longer window is the first one of a lock, or one in which the
// lock was not saturated, and says nothing of its waiters' work.
const outsideWindowMax = 1 << 20

// outsideSums is the state of Gate.workOutside for the gates that hash to
// it, kept beside the Gate, which stays 24 bytes. Gates that share one mix
// their counts, and two releases that judge at once may lose a window
// between them (the loads and stores of judge are not one step): either
// can only steer the policy, never the protocol.
type outsideSums struct {
	enters    atomic.Uint32 // slow-path entries of vCPUs under restriction (Gate.enter)
	enterMark atomic.Uint32 // enters at the last admission by a release
	seqMark   atomic.Uint32 // the release count (seq) at that admission
	entries   atomic.Uint32 // decaying sum of the entries of each window
	releases  atomic.Uint32 // decaying sum of the releases of each window
	on        atomic.Bool   // the last verdict of Gate.workOutside
	_         [64 - 6*4]byte
}

// outsideTable holds the outsideSums of every gate, by the gate's address.
var outsideTable [64]outsideSums

// outsideOf returns the outsideSums of g.
func outsideOf(g *Gate) *outsideSums {
	k := Key(g)
	return &outsideTable[(k>>6^k>>12)%uintptr(len(outsideTable))]
}

// workOutside reports whether the waiters of the lock have work outside
// it, for a release with release count seq that is about to admit a
// passive waiter. It judges by the slow-path entries of vCPUs per release
// since the lock's waiters began to wait outside: a locker that misses
// the fast path has come back from work outside the lock and found it
// taken, while on a lock whose holder does all its work inside, the
// running holder takes the lock again at once, and lockers rarely miss.
// The held fraction does not tell the two apart (a serial lock's short
// critical sections leave it free half the time). The counts of each
// window between two admissions by a release go into sums that decay by
// 1/outsideDecay per window, so that a few short windows do not decide,
// and the verdict turns on at 1/outsideShare and stays on only at
// 1/outsideStay, since the rule it steers adds entries of its own.
func (g *Gate) workOutside(seq uint32) bool { return outsideOf(g).judge(seq) }

// judge is Gate.workOutside on the sums o, for a release with release
// count seq.
func (o *outsideSums) judge(seq uint32) bool {
	e := o.enters.Load()
	de, dq := e-o.enterMark.Swap(e), seq-o.seqMark.Swap(seq)
	if dq < outsideWindowMax {
		sumE, sumQ := o.entries.Load(), o.releases.Load()
		o.entries.Store(sumE - sumE/outsideDecay + de)
		o.releases.Store(sumQ - sumQ/outsideDecay + dq)
	}
	share := uint32(outsideShare)
	on := o.on.Load()
	if on {
		share = outsideStay
	}
	v := uint64(o.entries.Load())*uint64(share) >= uint64(o.releases.Load())
	if v != on {
		o.on.Store(v)
	}
	return v
}

// besideReleaser reports whether the calling release, with release count
// seq, is a vCPU whose own CPU the oldest passive waiter sleeps on, on a
// lock whose waiters have work outside it (Gate.workOutside, which only a
// vCPU's release reaches). Such a waiter, once kicked, waits for the
// releaser's time slice to end before it runs: 1.3-1.7 ms here, against
// 0.02-0.4 ms on another CPU (README, "Admissions beside the releaser").
// Its admission keeps W set all that time, so it makes no swap: a swap
// would send the next running vCPU that finds room in the active set
// outside while nobody else can be let in, and a CPU whose vCPUs all wait
// outside idles. On ebizzy at 2x-4x that took pv-qspin's
// idle share from 15-25% to 8-17%, and its throughput up 2% / 16% / 2% at
// 2x / 3x / 4x (medians of 40 alternated rounds). On dbench, whose work is
// all inside the lock, letting the running vCPU in only pulls the lock
// across CPUs: with the rule on for every such admission, dbench lost 4-6%
// at 3x-4x. So it applies only while Gate.workOutside finds work outside,
// and dbench stayed within 1% (README, "The beside rule, kept").
func (g *Gate) besideReleaser(seq uint32) bool {
	cur := kick.Current()
	if cur == nil || Of(cur) == nil || !g.workOutside(seq) {
		return false
	}
	d := cur.Domain()
	return d != nil && passiveWaiters.Sleeper(Key(g), uint64(g.head.Load())) == d
}
