package ticket

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
)

type variant struct {
	name string
	new  func() *Lock
}

var variants = []variant{
	{"native", func() *Lock { return New(Native()) }},
	{"pv", func() *Lock { return New() }},
	// A short threshold makes PV waiters halt often, exercising the
	// publish/flag/re-check/halt and kick paths under real preemption.
	{"pv-short", func() *Lock { return New(SpinThreshold(64)) }},
	// Without restriction every waiter takes a ticket, so that the
	// ticket holders halt and are kicked in turn.
	{"pv-short-unrestricted", func() *Lock { return New(SpinThreshold(64), NoRestriction()) }},
}

// checkClean fails the test if the PV slow path lost a wake-up or a halt
// ran into the watchdog while the stress ran.
func checkClean(t *testing.T, before lockstat.Snapshot) lockstat.Snapshot {
	t.Helper()
	d := Stats(ModePV).Snapshot().Sub(before)
	if d.Get(HaltTimeouts) != 0 || d.Get(LostWakeups) != 0 {
		t.Fatalf("halt timeouts %d, lost wake-ups %d: a waiter slept through its turn",
			d.Get(HaltTimeouts), d.Get(LostWakeups))
	}
	return d
}

func TestMutualExclusionOvercommitted(t *testing.T) {
	total := 0
	for _, v := range variants {
		for _, oc := range []float64{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/oc=%gx", v.name, oc), func(t *testing.T) {
				iters := 60000
				if v.name == "native" && oc > 1 {
					// Native ticket locks collapse under overcommit; a few
					// thousand hand-offs still cover the preempted-waiter
					// paths without taking minutes.
					iters = 2000
				}
				// The native lock, which collapses, gets a short deadline;
				// the PV locks, which carry the suite's 10^6 acquisitions,
				// get room to finish their quota on a loaded machine.
				deadline := 5 * time.Second
				if v.name != "native" {
					deadline = 60 * time.Second
				}
				before := Stats(ModePV).Snapshot()
				res, err := locktest.Stress(v.new(), locktest.Config{
					Overcommit: oc, Iterations: iters, Work: 20, Deadline: deadline,
				})
				if err != nil {
					t.Fatal(err)
				}
				d := checkClean(t, before)
				// Halts need a holder preempted mid-section. A run shorter
				// than a time slice may see none: its vCPUs ran one after
				// another. Such a run is repeated, longer, a few times.
				wantsHalt := oc > 1 && (v.name == "pv-short-unrestricted" || v.name == "pv-short")
				for try := 0; wantsHalt && d.Get(Halts)+d.Get(PassiveHalts) == 0 && try < 4 && res.Elapsed < 50*time.Millisecond; try++ {
					iters *= 4
					more, err := locktest.Stress(v.new(), locktest.Config{
						Overcommit: oc, Iterations: iters, Work: 20, Deadline: deadline,
					})
					if err != nil {
						t.Fatal(err)
					}
					res.Acquisitions += more.Acquisitions
					res.Elapsed += more.Elapsed
					d = checkClean(t, before)
				}
				switch {
				case v.name == "pv-short-unrestricted" && oc > 1 && d.Get(Halts) == 0:
					t.Errorf("no PV ticket holder halted at %gx with a 64-poll threshold", oc)
				case v.name == "pv-short" && oc > 1 && d.Get(Halts)+d.Get(PassiveHalts) == 0:
					t.Errorf("no PV waiter halted, in the lock or outside it, at %gx with a 64-poll threshold", oc)
				}
				total += res.Acquisitions
				t.Logf("%d vCPUs: %d acquisitions in %v, halts %d, kicks %d",
					res.VCPUs, res.Acquisitions, res.Elapsed, d.Get(Halts), d.Get(ReleasedSlowKicked))
			})
		}
	}
	if !testing.Short() && total < 1_000_000 {
		t.Fatalf("only %d acquisitions in total; the suite promises at least 10^6", total)
	}
}

// TestManyVCPUs hands a PV ticket lock around 256 vCPUs in FIFO order, each
// hand-off to a halted waiter a wake-up: the deadline leaves room for a
// loaded host, and only a vCPU that never gets its turn runs into it.
func TestManyVCPUs(t *testing.T) {
	defer locktest.LongHaltTimeout()()
	before := Stats(ModePV).Snapshot()
	res, err := locktest.Stress(New(SpinThreshold(128)), locktest.Config{
		VCPUs: 256, Iterations: 200, Work: 10, Deadline: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, before)
	if res.Acquisitions != 256*200 {
		t.Fatalf("%d acquisitions, want %d: some vCPU stalled until the deadline", res.Acquisitions, 256*200)
	}
}

func TestZeroValueFromGoroutines(t *testing.T) {
	var mu Lock // zero value: PV, default threshold
	if !mu.PV() {
		t.Fatal("zero Lock is not PV")
	}
	var counter int
	const g, n = 8, 3000
	testkit.Goroutines(g, func(int) {
		for j := 0; j < n; j++ {
			mu.Lock()
			counter++
			mu.Unlock()
		}
	})
	if counter != g*n {
		t.Fatalf("counter %d, want %d", counter, g*n)
	}
	if mu.IsLocked() {
		t.Fatal("lock still held")
	}
}

// TestGoroutinesHaltAndAreKicked makes plain goroutines halt (park
// backend) behind a long-held lock and checks every one is kicked.
func TestGoroutinesHaltAndAreKicked(t *testing.T) {
	l := New(SpinThreshold(1), NoRestriction()) // every waiter takes a ticket
	before := Stats(ModePV).Snapshot()
	l.Lock()
	const g = 6
	var wg sync.WaitGroup
	var acquired atomic.Int32
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Lock()
			acquired.Add(1)
			l.Unlock()
		}()
	}
	testkit.WaitFor(t, "every goroutine to halt", func() bool { return Stats(ModePV).Snapshot().Sub(before).Get(Halts) >= g })
	l.Unlock()
	wg.Wait()
	d := checkClean(t, before)
	if acquired.Load() != g || d.Get(ReleasedSlowKicked) < g {
		t.Fatalf("acquired %d, kicks %d; want %d each", acquired.Load(), d.Get(ReleasedSlowKicked), g)
	}
}

// TestDirectedKick halts K vCPUs behind a held lock and checks that each
// slow release kicks exactly one waiter: the holder of the next ticket.
func TestDirectedKick(t *testing.T) {
	const k = 5
	l := New(SpinThreshold(1), NoRestriction()) // every waiter takes a ticket
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: k})
	before := Stats(ModePV).Snapshot()
	for _, v := range vm.VCPUs() {
		if w := v.Waiter(); w != nil {
			w.ResetCounters()
		}
	}
	l.Lock()
	release := make(chan struct{}) // one token lets one holder go on
	var order []int
	errc := make(chan error, 1)
	go func() {
		errc <- vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
			l.Lock()
			order = append(order, v.Index())
			<-release // blocks this vCPU's thread; fine for a test
			l.Unlock()
			return nil
		})
	}()
	halted := func() int {
		n := 0
		for _, v := range vm.VCPUs() {
			n += int(v.Waiter().Counters().Halts)
		}
		return n
	}
	kicks := func() int {
		n := 0
		for _, v := range vm.VCPUs() {
			n += int(v.Waiter().Counters().KicksReceived)
		}
		return n
	}
	testkit.WaitFor(t, "the waiters to halt", func() bool { return halted() == k })
	for i := 1; i <= k; i++ {
		if i == 1 {
			l.Unlock()
		} else {
			release <- struct{}{}
		}
		testkit.WaitFor(t, "the kick", func() bool { return kicks() >= i })
		time.Sleep(20 * time.Millisecond) // room for a wrongly broadcast kick to land
		if got := kicks(); got != i {
			t.Fatalf("after %d slow releases %d waiters were kicked", i, got)
		}
	}
	release <- struct{}{}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	d := checkClean(t, before)
	if d.Get(ReleasedSlowKicked) != k || d.Get(TakenSlow) != k || len(order) != k {
		t.Fatalf("kicks %d, slow entries %d, acquisitions %d; want %d each",
			d.Get(ReleasedSlowKicked), d.Get(TakenSlow), len(order), k)
	}
}

// TestKickBeforeHalt has the unlocker kick a waiter that is published and
// has flagged the lock but has not halted yet: the halt must return at once.
func TestKickBeforeHalt(t *testing.T) {
	l := New()
	l.Lock()
	inc := uint32(consts[l.mode].inc)
	ticket := uint32(l.word.Add(uint64(inc)<<tailShift)>>tailShift) - inc // a waiter's ticket
	w := kick.NewWaiter(kick.Park)
	w.Arm()
	waiters.Publish(w, lockcore.Key(l), uint64(ticket))
	l.word.Or(flagBit)
	l.Unlock() // sees the flag, finds the published waiter, kicks it
	if !w.Kicked() {
		t.Fatal("unlock did not kick the published holder of the next ticket")
	}
	done := make(chan kick.Result, 1)
	go func() { done <- w.Halt(0) }()
	if r := testkit.Receive(t, done, 5*time.Second, "halt slept through a kick that came before it"); r != kick.Kicked {
		t.Fatalf("halt after an early kick returned %v", r)
	}
	waiters.Withdraw(w)
	if uint32(l.word.Load()) != ticket {
		t.Fatal("head does not serve the waiter's ticket")
	}
	l.Unlock()
	if l.IsLocked() {
		t.Fatal("lock held after the last unlock")
	}
}

func TestUnlockOfUnlockedPanics(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			l := v.new()
			testkit.MustPanic(t, "unlock of unlocked lock", l.Unlock)
			l.Lock()
			l.Unlock()
			testkit.MustPanic(t, "unlock of unlocked lock", l.Unlock)
			if l.IsLocked() {
				t.Errorf("the failed Unlock corrupted the lock")
			}
		})
	}
}

func TestTryLock(t *testing.T) {
	for _, v := range variants {
		l := v.new()
		if !l.TryLock() {
			t.Fatalf("%s: TryLock of a free lock failed", v.name)
		}
		if l.TryLock() {
			t.Fatalf("%s: TryLock succeeded while held", v.name)
		}
		// With a waiter queued, TryLock must not jump the queue.
		got := make(chan struct{})
		go func() { l.Lock(); close(got) }()
		testkit.WaitFor(t, "a waiter to show in IsContended", l.IsContended)
		l.Unlock()
		<-got
		if l.TryLock() {
			t.Fatalf("%s: TryLock succeeded while the waiter holds the lock", v.name)
		}
		l.Unlock()
		if !l.TryLock() {
			t.Fatalf("%s: TryLock failed after the last unlock", v.name)
		}
		l.Unlock()
	}
}

func TestIsContended(t *testing.T) {
	for _, v := range variants {
		l := v.new()
		inc := uint32(consts[l.mode].inc)
		if l.IsContended() || l.IsLocked() {
			t.Fatalf("%s: free lock reports contended/locked", v.name)
		}
		l.Lock()
		if l.IsContended() || !l.IsLocked() {
			t.Fatalf("%s: held, uncontended lock misreported", v.name)
		}
		l.word.Add(uint64(inc) << tailShift) // a second ticket is taken
		if !l.IsContended() {
			t.Fatalf("%s: a waiting ticket is not reported", v.name)
		}
		if l.PV() {
			l.word.Or(flagBit)
			if !l.IsContended() {
				t.Fatalf("%s: flagged lock with a waiter not contended", v.name)
			}
		}
		// Hand the lock to the phantom waiter and release it.
		l.word.Add(uint64(inc))
		if l.IsContended() || !l.IsLocked() {
			t.Fatalf("%s: after hand-off, held by one: contended=%v", v.name, l.IsContended())
		}
		l.word.Add(uint64(inc))
		if l.IsLocked() {
			t.Fatalf("%s: lock still held", v.name)
		}
	}
}

// TestWrapAroundExact checks the head carry cancellation at the boundary:
// releasing the last ticket before 2^32 must not disturb tail.
func TestWrapAroundExact(t *testing.T) {
	for _, v := range variants {
		l := v.new()
		inc := uint32(consts[l.mode].inc)
		h := uint32(0) - inc
		l.word.Store(uint64(h)<<tailShift | uint64(h)) // free, at the last ticket
		l.Lock()
		if head, tail := split(l.word.Load()); head != h || tail != 0 {
			t.Fatalf("%s: after Lock head=%#x tail=%#x", v.name, head, tail)
		}
		l.Unlock()
		if w := l.word.Load(); w != 0 {
			t.Fatalf("%s: after wrapping unlock word=%#x, want 0 (carry not cancelled)", v.name, w)
		}
		if l.IsLocked() || !l.TryLock() {
			t.Fatalf("%s: lock unusable after wrap", v.name)
		}
		l.Unlock()
	}
}

// TestWrapAroundContended runs contended vCPUs across the wrap point.
func TestWrapAroundContended(t *testing.T) {
	for _, v := range variants {
		for _, oc := range []float64{1, 2} {
			l := v.new()
			inc := uint32(consts[l.mode].inc)
			start := uint32(0) - 500*inc // 500 tickets before the wrap
			l.word.Store(uint64(start)<<tailShift | uint64(start))
			before := Stats(ModePV).Snapshot()
			iters := 2000
			if v.name == "native" && oc > 1 {
				iters = 500
			}
			res, err := locktest.Stress(l, locktest.Config{Overcommit: oc, Iterations: iters, Work: 10, Deadline: 8 * time.Second})
			if err != nil {
				t.Fatalf("%s at %gx: %v", v.name, oc, err)
			}
			checkClean(t, before)
			head, tail := split(l.word.Load())
			want := start + uint32(res.Acquisitions)*inc
			if head != want || tail&^(inc-1) != want {
				t.Fatalf("%s at %gx: after %d acquisitions head=%#x tail=%#x, want %#x",
					v.name, oc, res.Acquisitions, head, tail, want)
			}
			if res.Acquisitions < 500 {
				t.Fatalf("%s at %gx: only %d acquisitions, the wrap was not crossed", v.name, oc, res.Acquisitions)
			}
		}
	}
}

func TestNoPVSpinNeverHalts(t *testing.T) {
	defer locktest.NoPVSpin()()
	before := Stats(ModePV).Snapshot()
	if _, err := locktest.Stress(New(SpinThreshold(16)), locktest.Config{Overcommit: 2, Iterations: 500, Deadline: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if d := Stats(ModePV).Snapshot().Sub(before); d.Get(TakenSlow) != 0 || d.Get(Halts) != 0 {
		t.Fatalf("with PV spin off, %d slow entries and %d halts", d.Get(TakenSlow), d.Get(Halts))
	}
}

func TestSpinDurationOption(t *testing.T) {
	short, long := New(SpinDuration(10*time.Microsecond)), New(SpinDuration(time.Millisecond))
	if short.spin.Threshold() == 0 || long.spin.Threshold() < 10*short.spin.Threshold() {
		t.Fatalf("thresholds %d and %d not proportional to 10µs and 1ms", short.spin.Threshold(), long.spin.Threshold())
	}
	if New(SpinThreshold(0)).spin.Threshold() != pvlock.DefaultSpinThreshold {
		t.Fatal("zero threshold does not mean the default")
	}
}

// TestHaltEarlyWhileHeadWakes checks the early halt: while the holder of
// the served ticket is marked as just kicked (waking), a waiter halts at
// once instead of spinning out its threshold. The threshold here is far
// longer than the test's patience, so only the early halt publishes the
// waiter in time; the unlock then kicks it, as any halted waiter.
func TestHaltEarlyWhileHeadWakes(t *testing.T) {
	l := New(SpinThreshold(1 << 31))
	before := Stats(ModePV).Snapshot()
	l.Lock()
	head := uint32(l.word.Load())
	inc := uint32(consts[l.mode].inc)
	l.waking.Store(head | 1) // as if head's holder had been kicked and not run yet
	done := make(chan struct{})
	go func() {
		l.Lock()
		l.Unlock()
		close(done)
	}()
	testkit.WaitFor(t, "the next ticket's holder to halt", func() bool { return waiters.Lookup(lockcore.Key(l), uint64(head+inc)) })
	l.Unlock()
	testkit.Receive(t, done, 10*time.Second, "the early-halted waiter was never kicked")
	d := checkClean(t, before)
	if d.Get(HaltEarly) != 1 || d.Get(Halts) != 1 || d.Get(ReleasedSlowKicked) != 1 {
		t.Fatalf("early halts %d, halts %d, kicked releases %d; want 1 each",
			d.Get(HaltEarly), d.Get(Halts), d.Get(ReleasedSlowKicked))
	}
}

// TestWakingHintRetiredByHolder checks that the waking hint lasts only
// while the kicked holder of the next ticket is waking: once that holder
// runs and owns the lock, the hint is gone, so arrivals during its critical
// section spin as usual instead of halting at once.
func TestWakingHintRetiredByHolder(t *testing.T) {
	l := New(SpinThreshold(1))
	before := Stats(ModePV).Snapshot()
	l.Lock()
	inc := uint32(consts[l.mode].inc)
	next := uint32(l.word.Load()) + inc
	acquired := make(chan uint32) // the hint as the woken holder sees it
	release := make(chan struct{})
	go func() {
		l.Lock()
		acquired <- l.waking.Load()
		<-release
		l.Unlock()
	}()
	testkit.WaitFor(t, "the next ticket's holder to halt", func() bool { return waiters.Lookup(lockcore.Key(l), uint64(next)) })
	l.Unlock() // kicks the halted holder of next
	hint := testkit.Receive(t, acquired, 10*time.Second, "the halted waiter was never kicked")
	close(release)
	if hint != 0 {
		t.Fatalf("the kicked holder of ticket %d owns the lock, yet the waking hint is still %#x", next, hint)
	}
	if d := checkClean(t, before); d.Get(ReleasedSlowKicked) != 1 {
		t.Fatalf("kicked releases %d, want 1", d.Get(ReleasedSlowKicked))
	}
}

// TestNoPVSpinWakingHintStillPolls checks that with PV spinning off a waiter
// keeps polling for cross-vCPU calls even while the waking hint names the
// served ticket: the early halt is a halt, and with halting off it must
// not turn into a tight loop that no native shootdown can get through.
func TestNoPVSpinWakingHintStillPolls(t *testing.T) {
	defer locktest.NoPVSpin()()
	l := New()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2})
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownNative, func(*pvlock.VCPU) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	l.Lock()
	l.waking.Store(uint32(l.word.Load()) | 1) // the served ticket's holder "is waking"
	var waiting atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 1 {
			waiting.Store(true)
			l.Lock() // spins: the lock is held by the test
			l.Unlock()
			return nil
		}
		for !waiting.Load() {
			v.Poll()
		}
		time.Sleep(10 * time.Millisecond) // let vCPU 1 reach its spin loop
		callCtx, stop := context.WithTimeout(ctx, 5*time.Second)
		_, err := sd.Call(callCtx, v, nil)
		stop()
		l.Unlock()
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("a native shootdown timed out: the spinning waiter never acknowledged it")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// panicHook is a halt hook that panics on the way into the halt, as a
// cross-vCPU call's handler run there might.
type panicHook struct{}

func (panicHook) Halting() { panic("handler failed") }
func (panicHook) Resumed() {}

// TestHaltPanicWithdraws checks that a waiter whose halt panics is no
// longer published: a later kick for its ticket must not reach it, and a
// reused waiter must never stay linked in the table.
func TestHaltPanicWithdraws(t *testing.T) {
	l := New(SpinThreshold(1))
	l.Lock()
	inc := uint32(consts[l.mode].inc)
	next := uint32(l.word.Load()) + inc
	recovered := make(chan any)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		w := kick.NewWaiter(kick.Futex)
		w.Hook = panicHook{}
		if err := kick.Bind(w); err != nil {
			recovered <- err
			return
		}
		defer kick.Unbind()
		defer func() { recovered <- recover() }()
		l.Lock()
	}()
	if r := <-recovered; r != "handler failed" {
		t.Fatalf("the halt returned %v, want the hook's panic", r)
	}
	if waiters.Lookup(lockcore.Key(l), uint64(next)) {
		t.Fatal("the waiter whose halt panicked is still published in the table")
	}
}
