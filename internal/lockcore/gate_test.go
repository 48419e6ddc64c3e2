package lockcore

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// gateLock is the smallest lock with a gate: a test-and-set word whose
// admitted waiters spin for it, and whose every release looks at the gate
// (the queued lock's way).
type gateLock struct {
	word     atomic.Uint32
	gate     Gate
	marks    atomic.Int32 // MarkPassive calls
	releases uint32       // the holder's count of the releases (Gate.Released's seq)
}

var (
	gateTestStats  = lockstat.New("gatetest", "pv", WithGateEvents([]string{Halts, HaltTimeouts, LostWakeups}))
	gateTestEvents = GateEventsAt(3, HaltEvents{Timeouts: 1, LostWakeups: 2})
)

func (l *gateLock) MarkPassive() { l.marks.Add(1) }
func (l *gateLock) Free() bool   { return l.word.Load() == 0 }

func (l *gateLock) Lock() {
	if l.word.CompareAndSwap(0, 1) {
		return
	}
	l.gate.Enter(l, gateTestStats, &gateTestEvents, true)
	for i := 1; !l.word.CompareAndSwap(0, 1); i++ {
		if i%64 == 0 {
			runtime.Gosched() // give the P to the goroutines an admission woke
		}
		relax.Pause(1)
	}
	l.gate.Leave()
}

func (l *gateLock) Unlock() {
	// step order of a gated release: release, then look at the gate.
	l.releases++
	n := l.releases // read while we hold the lock
	l.word.Store(0)
	if l.gate.Waiting() {
		l.gate.Released(n, gateTestStats, &gateTestEvents)
	}
}

// lockOutside locks l, held by the caller, from a new goroutine that waits
// outside the gate: entered with no active place if passive, else active
// at first and then demoted, as qspin's contender is after its spin. The
// goroutine unlocks at once, and the channel is closed when it is done.
func (l *gateLock) lockOutside(passive bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if passive {
			l.gate.EnterPassive(l, gateTestStats, &gateTestEvents, true)
		} else {
			l.gate.Enter(l, gateTestStats, &gateTestEvents, true)
			l.gate.Demote(l, gateTestStats, &gateTestEvents)
		}
		for !l.word.CompareAndSwap(0, 1) {
			relax.Pause(1)
		}
		l.gate.Leave()
		l.Unlock()
	}()
	return done
}

// gateEvents returns the test lock's event counts by name.
func gateEvents() map[string]uint64 {
	out := map[string]uint64{}
	sums := gateTestStats.Sum()
	for i, name := range gateTestStats.Events() {
		out[name] = sums[i]
	}
	return out
}

// A goroutine that finds the active set full waits outside, counted as a
// passive waiter and halted, and the release that drains the active set
// admits it: the state word counts it passive, then active, then gone.
func TestGateParksSurplusWaiters(t *testing.T) {
	// Only drained admissions here: a watcher stalled past the fairness
	// bound would admit itself.
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	before := gateEvents()
	l.Lock()
	// The first waiter is active: it spins in the lock.
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); l.Lock(); l.Unlock() }()
	testkit.WaitFor(t, "an active waiter", func() bool { return l.gate.Active() == 1 })
	// The second waits outside.
	go func() { defer done.Done(); l.Lock(); l.Unlock() }()
	testkit.WaitFor(t, "a passive waiter", func() bool { return l.gate.Passive() == 1 })
	testkit.WaitFor(t, "the passive waiter to halt", func() bool {
		return gateEvents()[PassiveHalts] > before[PassiveHalts]
	})
	if !l.gate.Waiting() || l.gate.Active() != 1 {
		t.Fatalf("state %#x: want one active, one passive", l.gate.state.Load())
	}
	l.Unlock()
	done.Wait()
	if s := l.gate.state.Load(); s != 0 {
		t.Fatalf("state %#x after every waiter left, want 0", s)
	}
	after := gateEvents()
	if got := after[PassiveWaits] - before[PassiveWaits]; got != 1 {
		t.Errorf("%d passive waits, want 1", got)
	}
	if got := after[AdmittedDrained] - before[AdmittedDrained]; got != 1 {
		t.Errorf("%d drained admissions, want 1", got)
	}
	if after[HaltTimeouts] != before[HaltTimeouts] {
		t.Errorf("%d halt timeouts", after[HaltTimeouts]-before[HaltTimeouts])
	}
}

// Passive waiters are admitted in the order they came, one at a time:
// while an admitted waiter is on its way in (W), releases admit nobody.
func TestGateAdmitsInOrderOneAtATime(t *testing.T) {
	// Only drained admissions here: a watcher stalled past the fairness
	// bound would admit itself.
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	l.Lock()
	go func() { l.Lock(); l.Unlock() }() // the active waiter
	testkit.WaitFor(t, "an active waiter", func() bool { return l.gate.Active() == 1 })
	const n = 5
	var (
		mu    sync.Mutex
		order []int
		done  sync.WaitGroup
	)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			l.Lock()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Unlock()
		}()
		testkit.WaitFor(t, "the next passive waiter", func() bool { return l.gate.Passive() == uint32(i+1) })
		// Its passive ticket is taken, and it has halted or is about to:
		// wait for its ticket before the next one comes.
		testkit.WaitFor(t, "its passive ticket", func() bool { return l.gate.tail.Load() == uint32(i+1) })
	}
	l.Unlock()
	done.Wait()
	for i, g := range order {
		if g != i {
			t.Fatalf("passive waiters took the lock in order %v, want 0..%d", order, n-1)
		}
	}
}

// Released admits only when the active set has drained and no admitted
// waiter is on its way, and reports whether passive waiters remain.
func TestGateReleasedRules(t *testing.T) {
	var g Gate
	ev := &gateTestEvents
	if g.Released(0, gateTestStats, ev) {
		t.Fatal("Released reports passive waiters on an empty gate")
	}
	g.state.Store(2*passiveOne + 1) // two passive, one active
	g.tail.Store(2)
	g.last.Store(Now()) // the fairness bound is far
	if !g.Released(0, gateTestStats, ev) || g.head.Load() != 0 {
		t.Fatalf("with an active waiter: admitted (head %d)", g.head.Load())
	}
	g.state.Store(2 * passiveOne) // drained
	if !g.Released(1, gateTestStats, ev) || g.head.Load() != 1 || g.state.Load() != passiveOne|wokenBit|cullBit {
		t.Fatalf("drained: head %d, state %#x; want head 1, one passive, W and C", g.head.Load(), g.state.Load())
	}
	if !g.Released(0, gateTestStats, ev) || g.head.Load() != 1 {
		t.Fatal("a second admission while one is on its way")
	}
	// The admitted waiter clears W as it becomes active.
	g.state.Add(^(wokenBit - 2))
	if g.state.Load() != passiveOne|cullBit|1 {
		t.Fatalf("state %#x after the admitted waiter became active", g.state.Load())
	}
	// Past the fairness bound, a release admits despite the active waiter,
	// but only one whose seq is a multiple of fairCheck looks at the clock.
	g.last.Store(Now() - FairBound)
	for seq := uint32(fairCheck + 1); seq < 2*fairCheck; seq++ {
		if g.Released(seq, gateTestStats, ev); g.head.Load() != 1 {
			t.Fatalf("release %d, not a multiple of %d, admitted by the fairness bound", seq, fairCheck)
		}
	}
	g.Released(2*fairCheck, gateTestStats, ev)
	if g.head.Load() != 2 || g.state.Load() != 1|wokenBit {
		t.Fatalf("past the fairness bound: head %d, state %#x; want 2, one active and W (no C: nobody is left outside)", g.head.Load(), g.state.Load())
	}
}

// A Gate is 24 bytes, so that a lock that embeds it keeps its word and
// the gate's state on one cache line.
func TestGateSize(t *testing.T) {
	if n := unsafe.Sizeof(Gate{}); n != 24 {
		t.Errorf("a Gate is %d bytes, want 24", n)
	}
}

// Passive tickets wrap around.
func TestGateTicketsWrap(t *testing.T) {
	var g Gate
	for _, head := range []uint32{0, 1<<31 - 1, 1 << 31, 1<<32 - 1} {
		g.head.Store(head)
		if g.admitted(head) || !g.admitted(head-1) || g.admitted(head+1) {
			t.Errorf("head %#x: admitted(head)=%v admitted(head-1)=%v admitted(head+1)=%v",
				head, g.admitted(head), g.admitted(head-1), g.admitted(head+1))
		}
	}
}

// With restriction off (the policy, the lock's own wish, or PV spinning
// off) every waiter is active.
func TestGateOff(t *testing.T) {
	for _, c := range []struct {
		name       string
		restricted bool
		set        func() func()
	}{
		{"lock", false, func() func() { return func() {} }},
		{"policy", true, func() func() { Restrict.Store(false); return func() { Restrict.Store(true) } }},
		{"pvspin", true, func() func() { PVSpin.Store(false); return func() { PVSpin.Store(true) } }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.set()()
			var g Gate
			for range 3 {
				if g.Enter(&gateLock{}, gateTestStats, &gateTestEvents, c.restricted) {
					t.Fatal("Enter reports restriction")
				}
			}
			if g.Active() != 3 || g.Waiting() {
				t.Fatalf("state %#x: want three active, none passive", g.state.Load())
			}
		})
	}
}

// Many goroutines on a saturated gated lock: mutual exclusion holds, every
// goroutine gets the lock again and again (no waiter stays passive), no
// halt times out, and the gate ends empty.
func TestGateStress(t *testing.T) {
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Millisecond)
	gateStress(t, false)
}

// The same with every queue of two passive waiters or more deep and a
// short bound, so that fair admissions stack again and again: every
// admitted waiter arrives, and W and the stacked counts end cleared.
func TestGateStressDeep(t *testing.T) {
	defer func(d int64, p uint32) { FairBound, deepPassive = d, p }(FairBound, deepPassive)
	FairBound, deepPassive = int64(20*time.Microsecond), 2
	before := gateEvents()
	gateStress(t, false)
	if gateEvents()[AdmittedStacked] == before[AdmittedStacked] {
		t.Error("no stacked admission with a 20µs bound and every queue of two deep")
	}
}

// The same with vCPUs, eight to a CPU domain whose siblings are runnable,
// as at 8x overcommit: they halt rather than watch, their admissions are
// swaps while few wait outside (C), and a stacked admission, which leaves
// many outside, clears C.
func TestGateStressDeepVCPUs(t *testing.T) {
	defer func(d int64, p uint32) { FairBound, deepPassive = d, p }(FairBound, deepPassive)
	FairBound, deepPassive = int64(20*time.Microsecond), 2
	before := gateEvents()
	gateStress(t, true)
	after := gateEvents()
	if after[AdmittedStacked] == before[AdmittedStacked] || after[PassiveHalts] == before[PassiveHalts] {
		t.Errorf("stacked admissions %d, passive halts %d: want both", after[AdmittedStacked]-before[AdmittedStacked],
			after[PassiveHalts]-before[PassiveHalts])
	}
}

// gateStress runs 16 goroutines on one gated lock until each has taken it
// 300 times, and checks the lock and the gate. With vcpus, each goroutine
// is a vCPU, eight to each of two CPU domains.
func gateStress(t *testing.T, vcpus bool) {
	t.Helper()
	doms := [2]*kick.Domain{kick.NewDomain(0), kick.NewDomain(1)}
	var (
		l      gateLock
		oracle testkit.Oracle
		counts [16]atomic.Int64
		stop   atomic.Bool
	)
	before := gateEvents()
	deadline := time.Now().Add(testkit.Short(20*time.Second, 60*time.Second))
	testkit.Goroutines(len(counts), func(g int) {
		if vcpus {
			defer fakeVCPU(t, MaxVCPUs-32+g, doms[g%2])()
		}
		for !stop.Load() {
			l.Lock()
			oracle.CriticalSection(g)
			l.Unlock()
			if counts[g].Add(1) >= 300 {
				// Done once every goroutine has had its share.
				all := true
				for i := range counts {
					all = all && counts[i].Load() >= 300
				}
				if all || time.Now().After(deadline) {
					stop.Store(true)
				}
			}
		}
	})
	if v := oracle.Violations(); v != 0 {
		t.Fatalf("%d mutual exclusion violations", v)
	}
	for i := range counts {
		if counts[i].Load() < 300 {
			t.Errorf("goroutine %d acquired %d times before the deadline: starved", i, counts[i].Load())
		}
	}
	after := gateEvents()
	if after[PassiveWaits] == before[PassiveWaits] {
		t.Error("16 goroutines on one lock and nobody waited outside")
	}
	// A passive wait may outlast the halt watchdog on a loaded machine;
	// one whose admission came and whose kick did not is a lost wake-up.
	if d := after[LostWakeups] - before[LostWakeups]; d != 0 {
		t.Errorf("%d lost wake-ups", d)
	}
	if s, k := l.gate.state.Load(), l.gate.stacked.Load(); s != 0 || k != 0 {
		t.Fatalf("state %#x and %d stacked at the end, want 0 and 0", s, k)
	}
}

// On a deep queue the bound shrinks with the queue, and a fair admission
// stacks: a release past the bound admits the oldest passive waiter even
// while another is on its way in (W). It leaves W set and counts the
// waiter in stacked; the arrivals take the counts first, and the last one
// clears W. A shallow queue never stacks.
func TestGateDeepQueueStacks(t *testing.T) {
	// A bound of an hour: the releases below take no time next to it,
	// however slow the machine.
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	if fairBound(deepPassive-1) != FairBound || fairBound(deepPassive) != FairBound ||
		fairBound(2*deepPassive) != FairBound/2 {
		t.Fatalf("fairBound: %d, %d, %d for %d, %d and %d waiting outside; want %d, %d, %d",
			fairBound(deepPassive-1), fairBound(deepPassive), fairBound(2*deepPassive),
			deepPassive-1, deepPassive, 2*deepPassive, FairBound, FairBound, FairBound/2)
	}
	ev := &gateTestEvents
	// tries calls Released for a round of releases, one of which looks
	// at the clock.
	tries := func(g *Gate) {
		for seq := uint32(1); seq <= fairCheck && g.head.Load() == 1; seq++ {
			g.Released(seq, gateTestStats, ev)
		}
	}
	// One admitted (head 1) and on its way (W), one active, n outside.
	setup := func(g *Gate, n uint32, since int64) {
		g.state.Store(n*passiveOne | wokenBit | 1)
		g.head.Store(1)
		g.tail.Store(n + 1)
		g.last.Store(Now() - since)
	}
	var g Gate
	setup(&g, deepPassive-1, 10*FairBound)
	tries(&g)
	if g.head.Load() != 1 {
		t.Fatalf("a shallow queue (%d outside) stacked an admission", deepPassive-1)
	}
	n := 2 * deepPassive
	setup(&g, n, FairBound/4) // the bound for n is FairBound/2
	tries(&g)
	if g.head.Load() != 1 {
		t.Fatalf("%d outside: stacked before the bound (%d ns) had passed", n, fairBound(n))
	}
	setup(&g, n, FairBound/2)
	before := gateEvents()
	tries(&g)
	want := (n-1)*passiveOne | wokenBit | 1 // no C: many are left outside
	if g.head.Load() != 2 || g.state.Load() != want || g.stacked.Load() != 1 {
		t.Fatalf("%d outside, past the bound: head %d, state %#x, %d stacked; want 2, %#x, 1",
			n, g.head.Load(), g.state.Load(), g.stacked.Load(), want)
	}
	// It counts as stacked, not as fair.
	after := gateEvents()
	if d, f := after[AdmittedStacked]-before[AdmittedStacked], after[AdmittedFair]-before[AdmittedFair]; d != 1 || f != 0 {
		t.Errorf("stacked admissions %d and fair %d, want 1 and 0", d, f)
	}
	g.becomeActive()
	if g.state.Load() != (n-1)*passiveOne|wokenBit|2 || g.stacked.Load() != 0 {
		t.Fatalf("after the first arrival: state %#x, %d stacked; want W kept and 0", g.state.Load(), g.stacked.Load())
	}
	g.becomeActive()
	if g.state.Load() != (n-1)*passiveOne|3 {
		t.Fatalf("after the last arrival: state %#x, want W cleared and three active", g.state.Load())
	}
}

// While the oldest passive waiter watches the lock (X), releases leave the
// gate alone: Waiting reports false, and a release that comes to Released
// anyway (it read the state before X was set, or the lock's mark sent it)
// admits nobody, even past the fairness bound, which the watcher keeps
// itself.
func TestGateReleasedLeavesAWatcherOutside(t *testing.T) {
	var g Gate
	ev := &gateTestEvents
	g.state.Store(2*passiveOne | watchBit) // two passive waiters, the oldest watching
	g.tail.Store(2)
	if g.Waiting() {
		t.Error("Waiting reports true while the oldest passive waiter watches")
	}
	if g.Passive() != 2 {
		t.Errorf("Passive %d, want 2", g.Passive())
	}
	g.last.Store(Now() - FairBound) // the fairness bound has passed
	for seq := range uint32(2 * fairCheck) {
		if !g.Released(seq, gateTestStats, ev) {
			t.Fatal("Released reports no passive waiters")
		}
	}
	if g.head.Load() != 0 || g.state.Load() != 2*passiveOne|watchBit {
		t.Fatalf("a release admitted past the watcher: head %d, state %#x", g.head.Load(), g.state.Load())
	}
	g.state.Store(2 * passiveOne) // the watch is over
	if !g.Waiting() {
		t.Error("Waiting reports false with passive waiters and no watcher")
	}
}

// withGoroutineWatch runs the test with as many Ps as CPUs, so that a
// goroutine that waits outside may watch (canWatch), a halt-poll ceiling of
// window and a fairness bound of bound; it returns the undo.
func withGoroutineWatch(window time.Duration, bound time.Duration) func() {
	procs := runtime.GOMAXPROCS(runtime.NumCPU())
	max, adaptive := kick.HaltPoll()
	kick.SetHaltPoll(window, false)
	fair := FairBound
	FairBound = int64(bound)
	return func() {
		FairBound = fair
		kick.SetHaltPoll(max, adaptive)
		runtime.GOMAXPROCS(procs)
	}
}

// A goroutine that is not a vCPU, in a program with no more Ps than CPUs,
// watches the lock when it waits outside, as a vCPU on an idle CPU does:
// its holder's releases skip the gate, and once the holder leaves the lock
// alone the watcher lets itself in, with no kick. With more Ps than CPUs,
// or when it entered with no active place (EnterPassive), it halts
// instead, and the release admits it with a kick.
func TestGateGoroutineWatches(t *testing.T) {
	defer withGoroutineWatch(time.Hour, time.Hour)()
	for _, tc := range []struct {
		name    string
		procs   int
		passive bool // enters with no active place (EnterPassive)
		watch   bool
		events  map[string]uint64
	}{
		{"procs=cpus", runtime.NumCPU(), false, true,
			map[string]uint64{PassiveWatches: 1, PassiveKicks: 0, PassiveHalts: 0, AdmittedDrained: 1}},
		{"procs>cpus", runtime.NumCPU() + 2, false, false,
			map[string]uint64{PassiveWatches: 0, PassiveKicks: 1, PassiveHalts: 1, AdmittedDrained: 1}},
		// A goroutine that enters with no active place sleeps, as a
		// reader of sync.RWMutex does behind a writer.
		{"enter-passive", runtime.NumCPU(), true, false,
			map[string]uint64{PassiveWatches: 0, PassiveKicks: 1, PassiveHalts: 1, AdmittedDrained: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			var l gateLock
			before := gateEvents()
			l.Lock()
			got := l.lockOutside(tc.passive)
			ev := PassiveHalts
			if tc.watch {
				ev = PassiveWatches
			}
			testkit.WaitFor(t, ev, func() bool { return gateEvents()[ev] > before[ev] })
			if s := l.gate.state.Load(); s&watchBit != 0 != tc.watch || s>>passiveShift != 1 {
				t.Fatalf("state %#x: want one passive waiter, watching %v", s, tc.watch)
			}
			if l.gate.Waiting() == tc.watch {
				t.Errorf("Waiting %v with the passive waiter watching %v", l.gate.Waiting(), tc.watch)
			}
			l.Unlock()
			testkit.Receive(t, got, 30*time.Second, "the passive goroutine did not take the lock")
			testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
			after := gateEvents()
			for ev, want := range tc.events {
				if d := after[ev] - before[ev]; d != want {
					t.Errorf("%s: %d, want %d", ev, d, want)
				}
			}
		})
	}
}

// A watcher keeps the fairness bound itself, since X turns the releases
// away: under a holder that keeps the lock, it admits itself once nobody
// has been admitted for FairBound, and with no release at all.
func TestGateWatcherKeepsTheFairnessBound(t *testing.T) {
	defer withGoroutineWatch(time.Hour, 2*time.Millisecond)()
	var l gateLock
	before := gateEvents()
	l.Lock()
	admitted := make(chan struct{})
	go func() {
		l.gate.Enter(&l, gateTestStats, &gateTestEvents, true)
		l.gate.Demote(&l, gateTestStats, &gateTestEvents) // returns once admitted
		close(admitted)
		for !l.word.CompareAndSwap(0, 1) {
			relax.Pause(1)
		}
		l.gate.Leave()
		l.Unlock()
	}()
	testkit.Receive(t, admitted, 30*time.Second, "the watcher did not admit itself by the fairness bound")
	if d := gateEvents()[AdmittedFair] - before[AdmittedFair]; d != 1 {
		t.Errorf("fair admissions: %d, want 1", d)
	}
	if !l.word.CompareAndSwap(1, 1) {
		t.Fatal("the lock was released meanwhile")
	}
	l.Unlock()
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
	if d := gateEvents()[PassiveWatches] - before[PassiveWatches]; d != 1 {
		t.Errorf("watches: %d, want 1", d)
	}
}

// flickerLock is a lock whose holder leaves it free for short gaps: held
// at its first look (the passive waiter's re-check, so that the waiter
// goes on to watch), then free in runs of run consecutive looks with one
// held look between them. Its pattern is counted in looks, not time, so
// the watcher meets the gaps however late the test goroutine runs.
type flickerLock struct {
	looks atomic.Int64
	run   int64
}

func (l *flickerLock) MarkPassive() {}
func (l *flickerLock) Free() bool {
	n := l.looks.Add(1)
	return n > 1 && (n-2)%(l.run+1) < l.run
}

// A watcher lets itself in only when its look finds the lock free for
// watchFreePolls polls: gaps of twice a passive waiter's freePolls, which
// a holder taking its lock again a microsecond or two after each release
// leaves, keep it outside until the fairness bound admits it.
func TestGateWatcherIgnoresShortGaps(t *testing.T) {
	defer withGoroutineWatch(time.Hour, 2*time.Millisecond)()
	if watchFreePolls <= 2*freePolls {
		t.Fatalf("watchFreePolls %d: the gaps below would let the watcher in", watchFreePolls)
	}
	l := &flickerLock{run: 2 * freePolls}
	var g Gate
	before := gateEvents()
	admitted := make(chan struct{})
	go func() {
		g.Enter(l, gateTestStats, &gateTestEvents, true)
		g.Demote(l, gateTestStats, &gateTestEvents) // returns once admitted
		g.Leave()
		close(admitted)
	}()
	testkit.Receive(t, admitted, 30*time.Second, "the watcher was never admitted")
	after := gateEvents()
	if w := after[PassiveWatches] - before[PassiveWatches]; w != 1 {
		t.Errorf("%d watches, want 1", w)
	}
	if d, f := after[AdmittedDrained]-before[AdmittedDrained], after[AdmittedFair]-before[AdmittedFair]; d != 0 || f != 1 {
		t.Errorf("admissions: %d drained, %d fair; want 0 and 1 (gaps of %d polls let the watcher in)", d, f, l.run)
	}
	// The re-check's look, then at least one whole gap and the held look
	// that ends it.
	if n := l.looks.Load(); n < l.run+2 {
		t.Errorf("the watcher looked %d times, want a whole gap of %d looks", n, l.run)
	}
	if s := g.state.Load(); s != 0 {
		t.Errorf("state %#x at the end, want 0", s)
	}
}

// A watch that finds the lock held for the whole halt-poll window ends in
// a halt; as the watcher clears X it marks the lock again (a release
// meanwhile may have cleared a mark that X made it skip), and the next
// release admits it with a kick.
func TestGateUnwatchMarksTheLock(t *testing.T) {
	defer withGoroutineWatch(time.Millisecond, time.Hour)()
	var l gateLock
	before := gateEvents()
	l.Lock()
	got := l.lockOutside(false)
	testkit.WaitFor(t, "the watch to end in a halt", func() bool {
		return gateEvents()[PassiveHalts] > before[PassiveHalts]
	})
	if s := l.gate.state.Load(); s != passiveOne {
		t.Fatalf("state %#x after the watch, want one passive waiter and no X", s)
	}
	// One mark as it went outside, one as it cleared X.
	if m := l.marks.Load(); m != 2 {
		t.Errorf("%d marks, want 2", m)
	}
	l.Unlock()
	testkit.Receive(t, got, 30*time.Second, "the halted watcher was not admitted")
	after := gateEvents()
	for ev, want := range map[string]uint64{PassiveWatches: 1, PassiveKicks: 1, AdmittedDrained: 1} {
		if d := after[ev] - before[ev]; d != want {
			t.Errorf("%s: %d, want %d", ev, d, want)
		}
	}
}

// fakeVCPU makes the calling goroutine a vCPU as the lock core sees one:
// locked to its thread, with a bound waiter in domain d (which counts it
// runnable) and an attached VCPU. It returns the undo.
func fakeVCPU(t *testing.T, slot int, d *kick.Domain) func() {
	t.Helper()
	runtime.LockOSThread()
	w := kick.NewWaiter(kick.Futex)
	w.SetDomain(d)
	d.Enter() // the vCPU runs
	var v VCPU
	v.Init(w, func() {})
	v.Attach(slot)
	if err := kick.Bind(w); err != nil {
		v.Detach()
		runtime.UnlockOSThread()
		t.Skip(err) // no way to identify the thread in this build
	}
	return func() {
		kick.Unbind()
		v.Detach()
		d.Leave()
		runtime.UnlockOSThread()
	}
}

// A vCPU that waits outside while its CPU would idle watches the lock
// instead of halting (X set): releases leave it outside, and once the
// holder leaves the lock alone it lets itself in, with no release left to
// admit it and no kick.
func TestGateWatcherTakesALockLeftAlone(t *testing.T) {
	// A watcher halts once no look found the lock free for the halt-poll
	// ceiling: make that longer than the test.
	// and keep the fairness bound out of the way.
	defer kick.SetHaltPoll(kick.HaltPoll())
	kick.SetHaltPoll(time.Hour, false)
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	before := gateEvents()
	l.Lock()
	got := demotedVCPU(t, &l, MaxVCPUs-2, kick.NewDomain(1))
	testkit.WaitFor(t, "the vCPU to watch", func() bool {
		return gateEvents()[PassiveWatches] > before[PassiveWatches]
	})
	if s := l.gate.state.Load(); s != passiveOne|watchBit {
		t.Fatalf("state %#x while the vCPU watches, want one passive waiter and X", s)
	}
	// A release while it watches admits nobody (an admission by a release
	// would kick it: PassiveKicks below); with the lock left alone, the
	// watcher lets itself in.
	l.Unlock()
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatalf("the watcher did not take the free lock; state %#x", l.gate.state.Load())
	}
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
	after := gateEvents()
	for ev, want := range map[string]uint64{PassiveWatches: 1, AdmittedDrained: 1, PassiveKicks: 0, PassiveHalts: 0} {
		if d := after[ev] - before[ev]; d != want {
			t.Errorf("%s: %d, want %d", ev, d, want)
		}
	}
}

// demotedVCPU starts fake vCPU id, homed in d, that enters l's gate,
// active at first (the active set is empty), then passive, as qspin's
// contender is after its spin. Once admitted it spins for the lock's word,
// leaves the gate, closes the returned channel and releases the lock.
func demotedVCPU(t *testing.T, l *gateLock, id int, d *kick.Domain) <-chan struct{} {
	t.Helper()
	got := make(chan struct{})
	go func() {
		defer fakeVCPU(t, id, d)()
		if !l.gate.Enter(l, gateTestStats, &gateTestEvents, true) {
			t.Error("Enter reports no restriction for a vCPU")
		}
		l.gate.Demote(l, gateTestStats, &gateTestEvents)
		for !l.word.CompareAndSwap(0, 1) {
			relax.Pause(1)
		}
		l.gate.Leave()
		close(got)
		l.Unlock()
	}()
	return got
}

// A vCPU whose CPU has another runnable vCPU does not watch: it halts as a
// passive waiter, and the release that drains the active set admits it
// with a kick. Watching there would take the CPU from its sibling.
func TestGateNoWatchBesideARunnableSibling(t *testing.T) {
	defer kick.SetHaltPoll(kick.HaltPoll())
	kick.SetHaltPoll(time.Hour, false)
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	before := gateEvents()
	d := kick.NewDomain(1)
	d.Enter() // the sibling: runnable on the same CPU
	defer d.Leave()
	l.Lock()
	got := demotedVCPU(t, &l, MaxVCPUs-3, d)
	testkit.WaitFor(t, "the vCPU to halt outside", func() bool {
		return gateEvents()[PassiveHalts] > before[PassiveHalts]
	})
	if s := l.gate.state.Load(); s&watchBit != 0 {
		t.Fatalf("state %#x: a vCPU with a runnable sibling set X", s)
	}
	l.Unlock()
	testkit.Receive(t, got, 30*time.Second, "the halted passive waiter was not admitted")
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
	after := gateEvents()
	for ev, want := range map[string]uint64{PassiveWatches: 0, AdmittedDrained: 1, PassiveKicks: 1} {
		if d := after[ev] - before[ev]; d != want {
			t.Errorf("%s: %d, want %d", ev, d, want)
		}
	}
}

// An admission leaves C set while others still wait outside; the next vCPU
// that finds room in the active set goes passive instead, clearing C, and
// waits its turn behind the waiters ahead of it. A goroutine pays no heed
// to C, and the admission that leaves nobody outside clears it.
func TestGateCullSendsTheNextVCPUOutside(t *testing.T) {
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	before := gateEvents()
	l.Lock()
	// One passive waiter, ticket 0, stands for one that an earlier
	// admission left outside; C is set.
	l.gate.state.Store(passiveOne | cullBit)
	l.gate.tail.Store(1)

	// A goroutine with room enters the active set, C or not.
	if !l.gate.Enter(&l, gateTestStats, &gateTestEvents, true) {
		t.Fatal("Enter reports no restriction for a goroutine")
	}
	if s := l.gate.state.Load(); s != passiveOne|cullBit|1 {
		t.Fatalf("state %#x after a goroutine entered, want one passive, C and one active", s)
	}
	l.gate.Leave()

	d := kick.NewDomain(1)
	d.Enter() // a runnable sibling: the vCPU halts rather than watch
	defer d.Leave()
	got := make(chan struct{})
	go func() {
		defer fakeVCPU(t, MaxVCPUs-4, d)()
		l.Lock()
		close(got)
		l.Unlock()
	}()
	testkit.WaitFor(t, "the vCPU to go outside", func() bool { return l.gate.Passive() == 2 })
	if s := l.gate.state.Load(); s != 2*passiveOne {
		t.Fatalf("state %#x after the culled vCPU counted itself, want two passive and no C", s)
	}
	if d := gateEvents()[PassiveCulls] - before[PassiveCulls]; d != 1 {
		t.Fatalf("%s: %d, want 1", PassiveCulls, d)
	}
	testkit.WaitFor(t, "its passive ticket", func() bool { return l.gate.tail.Load() == 2 })

	// A release admits ticket 0 first, not the culled vCPU, and sets C:
	// one still waits outside.
	l.gate.Released(1, gateTestStats, &gateTestEvents)
	if s := l.gate.state.Load(); s != passiveOne|wokenBit|cullBit || l.gate.head.Load() != 1 {
		t.Fatalf("state %#x, head %d after the first admission, want one passive, W and C, head 1", s, l.gate.head.Load())
	}
	select {
	case <-got:
		t.Fatal("the culled vCPU went ahead of the waiter before it")
	default:
	}
	// Ticket 0's waiter comes in and takes its turn (the lock is ours
	// meanwhile: it stands for its critical section).
	l.gate.state.Add(^(wokenBit - 2))
	l.gate.Leave()
	l.Unlock() // drained: admits the culled vCPU, and clears C
	testkit.Receive(t, got, 30*time.Second, "the culled vCPU was not admitted")
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
}

// An admission that leaves cullMaxPassive or more waiters outside is no
// swap: it clears C.
func TestGateNoCullWithManyOutside(t *testing.T) {
	var g Gate
	g.state.Store((cullMaxPassive+1)*passiveOne | cullBit)
	g.tail.Store(cullMaxPassive + 1)
	g.Released(1, gateTestStats, &gateTestEvents)
	if s := g.state.Load(); s != cullMaxPassive*passiveOne|wokenBit || g.head.Load() != 1 {
		t.Fatalf("state %#x, head %d; want %d passive, W, no C, head 1", s, g.head.Load(), cullMaxPassive)
	}
	g.state.Add(^(wokenBit - 2))
	g.Leave()
	g.Released(1, gateTestStats, &gateTestEvents)
	if s := g.state.Load(); s != (cullMaxPassive-1)*passiveOne|wokenBit|cullBit {
		t.Fatalf("state %#x; want %d passive, W and C", s, cullMaxPassive-1)
	}
}

// workOutside sums a lock's slow-path entries and releases over the
// windows between admissions, older windows weighing less. Its verdict
// turns on once the entries reach 1/outsideShare of the releases and stays
// on only while they reach 1/outsideStay. A window of outsideWindowMax
// releases or more is left out.
func TestGateWorkOutside(t *testing.T) {
	var o outsideSums // not the table's: other tests' gates may share a slot
	seq := uint32(0)
	window := func(entries, releases uint32) bool {
		o.enters.Add(entries)
		seq += releases
		return o.judge(seq)
	}
	const long = 8 * outsideDecay // windows, enough for the sums to settle
	// until runs windows of entries in releases until the verdict is
	// want, and returns how many it took, or -1 after long windows.
	until := func(entries, releases uint32, want bool) int {
		for i := range long {
			if window(entries, releases) == want {
				return i
			}
		}
		return -1
	}
	// dbench-like: one entry in 200 releases.
	if i := until(1, 200, true); i >= 0 {
		t.Fatalf("work outside found after %d windows of 1 entry per 200 releases", i)
	}
	// A few short windows of many entries do not turn the verdict.
	for i := range 3 {
		if window(5, 20) {
			t.Fatalf("short window %d of 5 entries in 20 releases turned the verdict", i)
		}
	}
	// One entry in 16 releases lies between the two shares: it turns the
	// verdict on, but does not keep it on.
	mid := uint32(200 / 16)
	if until(mid, 200, true) < 0 {
		t.Fatalf("no work outside found at %d entries per 200 releases; sums %d and %d", mid, o.entries.Load(), o.releases.Load())
	}
	if window(mid, 200) {
		t.Fatalf("the verdict stayed on at %d entries per 200 releases, under 1/%d", mid, outsideStay)
	}
	// ebizzy-like: one entry in 10 releases turns it on, and once the sums
	// have settled above 1/outsideStay, keeps it on.
	if until(20, 200, true) < 0 {
		t.Fatal("no work outside found at 1 entry per 10 releases")
	}
	for range long {
		window(20, 200)
	}
	if i := until(20, 200, false); i >= 0 {
		t.Fatalf("the verdict turned off after %d windows of 1 entry per 10 releases", i)
	}
	// A window too long to count (a lock that was not saturated) leaves
	// the sums as they were.
	e, q := o.entries.Load(), o.releases.Load()
	if !window(0, outsideWindowMax) || o.entries.Load() != e || o.releases.Load() != q {
		t.Fatalf("a window of %d releases moved the sums: %d, %d -> %d, %d", outsideWindowMax, e, q, o.entries.Load(), o.releases.Load())
	}
	// Back to dbench-like: the verdict turns off.
	if until(1, 200, false) < 0 {
		t.Fatal("the verdict stayed on at 1 entry per 200 releases")
	}
}

// besideAdmission returns the C bit after a release by a vCPU whose lock's
// oldest passive waiter is a vCPU asleep on the releaser's own CPU, with
// one more waiter outside, on a lock whose waiters have work outside it
// (outside) or not, and how many beside admissions (AdmittedBeside) the
// release counted.
func besideAdmission(t *testing.T, outside bool) (c uint32, beside uint64) {
	t.Helper()
	defer func(d int64) { FairBound = d }(FairBound)
	FairBound = int64(time.Hour)
	var l gateLock
	d := kick.NewDomain(1)
	l.Lock()
	// The passive vCPU: active at first, then demoted, as qspin's
	// contender is after its spin. The releaser below shares its CPU (one
	// runnable vCPU too many), so it halts rather than watch.
	release := make(chan struct{})
	released := make(chan uint32)
	go func() {
		defer fakeVCPU(t, MaxVCPUs-6, d)()
		<-release
		// The gate's part of a release, with the lock's word still held
		// by the test, so that the admitted vCPU cannot take it and
		// release it (and move C) before we look.
		l.gate.Released(l.releases+1, gateTestStats, &gateTestEvents)
		released <- l.gate.state.Load() & cullBit
	}()
	got := demotedVCPU(t, &l, MaxVCPUs-7, d)
	testkit.WaitFor(t, "the vCPU to sleep outside", func() bool {
		return passiveWaiters.Sleeper(Key(&l.gate), 0) == d
	})
	// One more waiter outside, ticket 1, stands for one that an earlier
	// admission left there: the admission below leaves it outside.
	l.gate.state.Add(passiveOne)
	l.gate.tail.Add(1)
	o := outsideOf(&l.gate)
	o.enterMark.Store(o.enters.Load())
	o.seqMark.Store(l.releases)
	o.entries.Store(0)
	o.releases.Store(1)
	o.on.Store(false)
	if outside {
		o.entries.Store(1)
	}
	before := gateEvents()[AdmittedBeside]
	close(release)
	c = testkit.Receive(t, released, 30*time.Second, "the release did not return")
	beside = gateEvents()[AdmittedBeside] - before
	if h := l.gate.head.Load(); h != 1 {
		t.Fatalf("head %d after the release, want 1: the sleeping vCPU admitted", h)
	}
	l.Unlock()
	testkit.Receive(t, got, 30*time.Second, "the sleeping vCPU was not admitted")
	// The admitted vCPU's release admitted ticket 1's stand-in, which
	// nobody holds: W stays for it. Clear it.
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == wokenBit })
	l.gate.state.Store(0)
	return c, beside
}

// An admission by a release whose waiter sleeps on the releaser's own CPU
// is no swap on a lock whose waiters have work outside it: C stays clear,
// so the next running vCPU with room enters the active set, and the
// admission counts as beside the releaser. On a lock without work
// outside, it swaps as every admission does, and counts as none.
func TestGateNoSwapBesideTheReleaser(t *testing.T) {
	if c, n := besideAdmission(t, true); c != 0 || n != 1 {
		t.Errorf("work outside: C %#x, %d beside admissions: want C clear, 1", c, n)
	}
	if c, n := besideAdmission(t, false); c == 0 || n != 0 {
		t.Errorf("no work outside: C %#x, %d beside admissions: want C set, none", c, n)
	}
}
