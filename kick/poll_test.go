package kick

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
)

// TestDomainCountBalances halts, kicks and times out futex waiters of one
// domain at random, with polling on, and checks the runnable count the
// halt-polling decisions rest on: every waiter's halt takes it out, and
// exactly one of its kicker or itself puts it back, so once every waiter
// has stopped the count is exactly zero again.
func TestDomainCountBalances(t *testing.T) {
	max, adaptive := HaltPoll()
	defer SetHaltPoll(max, adaptive)
	SetHaltPoll(50*time.Microsecond, false)
	const n, rounds = 4, 300
	d := NewDomain(1)
	ws := make([]*Waiter, n)
	for i := range ws {
		ws[i] = NewWaiter(Futex)
		ws[i].SetDomain(d)
	}
	stop := make(chan struct{})
	var kicker sync.WaitGroup
	kicker.Add(1)
	go func() { // kicks at random, halted or not
		defer kicker.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			ws[r.IntN(n)].Kick()
			time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			d.Enter()
			defer d.Leave()
			r := rand.New(rand.NewPCG(uint64(i), 3))
			for range rounds {
				w.Arm()
				w.Halt(time.Duration(r.IntN(200)+1) * time.Microsecond)
				// The kicker may count one waiter too many for a moment.
				if c := d.Runnable(); c < 1 || c > n+1 {
					t.Errorf("a running waiter sees %d runnable waiters in its domain of %d", c, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	kicker.Wait()
	if c := d.Runnable(); c != 0 {
		t.Fatalf("after every waiter left, the domain counts %d runnable waiters, want 0", c)
	}
	var polls, ok uint64
	for _, w := range ws {
		c := w.Counters()
		polls += c.PollsAttempted
		ok += c.PollsSuccessful
	}
	if polls == 0 {
		t.Fatal("no waiter ever halt-polled")
	}
	t.Logf("%d polls, %d caught their kick", polls, ok)
}

// TestDomainPerCPU checks the overcommit factor a waiter sizes its spin
// by: every waiter homed in the domain, halted or not, per CPU and rounded
// up, while a halt takes the waiter out of the runnable count only.
func TestDomainPerCPU(t *testing.T) {
	d := NewDomain(2)
	if p := d.PerCPU(); p != 1 {
		t.Fatalf("an empty domain: %d per CPU, want 1", p)
	}
	for range 5 {
		d.Enter()
	}
	if p, r := d.PerCPU(), d.Runnable(); p != 3 || r != 5 {
		t.Fatalf("5 waiters on 2 CPUs: %d per CPU, %d runnable; want 3 and 5", p, r)
	}
	w := NewWaiter(Futex)
	w.SetDomain(d)
	w.Arm()
	done := make(chan Result)
	go func() { done <- w.Sleep(10 * time.Second) }()
	deadline := time.Now().Add(10 * time.Second)
	for d.Runnable() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("a halted waiter left %d runnable, want 4", d.Runnable())
		}
		time.Sleep(time.Millisecond)
	}
	if p := d.PerCPU(); p != 3 {
		t.Fatalf("a halt changed the overcommit factor to %d, want 3", p)
	}
	w.Kick()
	if r := <-done; r != Kicked {
		t.Fatalf("the halted waiter returned %v, want Kicked", r)
	}
	for range 5 {
		d.Leave()
	}
	if p, r := d.PerCPU(), d.Runnable(); p != 1 || r != 0 {
		t.Fatalf("after every waiter left: %d per CPU, %d runnable; want 1 and 0", p, r)
	}
}

// TestPollStopsForSibling checks that a polling waiter gives its CPU up as
// soon as a sibling of its domain is kicked: its poll is cut short (an
// invalid poll) long before its window ends.
func TestPollStopsForSibling(t *testing.T) {
	max, adaptive := HaltPoll()
	defer SetHaltPoll(max, adaptive)
	const window = 2 * time.Second
	SetHaltPoll(window, false)
	d := NewDomain(1)
	poller, sleeper := NewWaiter(Futex), NewWaiter(Futex)
	poller.SetDomain(d)
	sleeper.SetDomain(d)
	d.Enter()
	d.Enter()
	var wg sync.WaitGroup
	// The kicked sleeper stays runnable (counted in the domain) until the
	// test is done: the poller may be off its CPU when the kick lands, and
	// must find the sibling runnable whenever it polls next.
	leave := make(chan struct{})
	halt := func(w *Waiter) {
		defer wg.Done()
		defer d.Leave()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		w.Arm()
		if r := w.Halt(10 * time.Second); r != Kicked {
			t.Errorf("halt returned %v, want kicked", r)
		}
		<-leave
	}
	wg.Add(1)
	go halt(sleeper) // halts while the poller runs: it sleeps at once
	testkit.WaitFor(t, "the sleeper to halt", func() bool { return d.Runnable() == 1 && sleeper.Counters().Halts == 1 })
	wg.Add(1)
	go halt(poller) // the last to halt: its CPU would idle, so it polls
	testkit.WaitFor(t, "the poller to poll", func() bool { return poller.Counters().PollsAttempted == 1 })
	if c := sleeper.Counters(); c.PollsAttempted != 0 {
		t.Fatalf("the first waiter polled although a sibling was runnable (%d polls)", c.PollsAttempted)
	}
	kicked := time.Now()
	sleeper.Kick()
	testkit.WaitFor(t, "the poll to be cut short", func() bool { return poller.Counters().PollsInvalid == 1 })
	stopped := time.Since(kicked)
	poller.Kick()
	close(leave)
	wg.Wait()
	c := poller.Counters()
	if c.PollsSuccessful != 0 || c.PollFailNanos >= uint64(window/2) {
		t.Fatalf("the poll was not cut short: %d successful, %v polled of a %v window",
			c.PollsSuccessful, time.Duration(c.PollFailNanos), window)
	}
	t.Logf("the poller stopped %v after its sibling's kick, having polled %v", stopped, time.Duration(c.PollFailNanos))
}

// TestAdaptGrowShrink checks the window rules, KVM's: keep after a poll
// that caught its kick, grow (from PollGrowStart, doubling, capped at the
// ceiling) when the kick came after the window but within the ceiling,
// shrink (halving, to zero below PollGrowStart) when it came later still.
func TestAdaptGrowShrink(t *testing.T) {
	max, adaptive := HaltPoll()
	defer SetHaltPoll(max, adaptive)
	SetHaltPoll(100*time.Microsecond, true)
	us := func(n int64) int64 { return n * int64(time.Microsecond) }
	for _, c := range []struct {
		window, blocked, want int64
	}{
		{0, us(5), us(10)},         // first opening: grow_start
		{us(10), us(5), us(10)},    // caught: keep
		{us(10), us(15), us(20)},   // just missed: double
		{us(80), us(90), us(100)},  // capped at the ceiling
		{us(100), us(500), us(50)}, // beyond the ceiling: halve
		{us(15), us(500), 0},       // below grow_start: off
		{us(40), us(100), us(80)},  // exactly the ceiling still grows
		{us(100), us(101), us(50)}, // just beyond it shrinks
	} {
		w := NewWaiter(Futex)
		w.pollNs.Store(c.window)
		w.adapt(c.window, c.blocked)
		if got := w.pollNs.Load(); got != c.want {
			t.Errorf("window %v, blocked %v: next window %v, want %v",
				time.Duration(c.window), time.Duration(c.blocked), time.Duration(got), time.Duration(c.want))
		}
	}
}

// TestPollBoundedByTimeout checks that a halt's timeout bounds its poll as
// well as its sleep: a poll window longer than the watchdog must not keep a
// waiter halted past it.
func TestPollBoundedByTimeout(t *testing.T) {
	max, adaptive := HaltPoll()
	defer SetHaltPoll(max, adaptive)
	SetHaltPoll(time.Hour, false)
	d := NewDomain(1) // nobody else runnable: the waiter may poll
	w := NewWaiter(Futex)
	w.SetDomain(d)
	d.Enter()
	defer d.Leave()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	w.Arm()
	if r := w.Halt(20 * time.Millisecond); r != TimedOut {
		t.Fatalf("an unkicked halt returned %v, want timed out", r)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a halt with a 20ms timeout lasted %v: the poll window outlived the watchdog", took)
	}
	if c := w.Counters(); c.PollsAttempted != 1 {
		t.Fatalf("%d polls attempted, want 1", c.PollsAttempted)
	}
}
