package torture

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/faults"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/pvlock"
	"go.uber.org/goleak"
)

// TestTortureEveryLock is the bounded torture suite: every registered
// lock at 2x and 4x overcommit, with stutter, shuffle and long holds,
// must end clean. Built with -tags pvlock_faults, the PV ticket runs also
// go through the widened race windows, and the test checks they did.
func TestTortureEveryLock(t *testing.T) {
	// About two and a half minutes of torture in all (40s with the fault
	// injection build, which runs the suite a second time), however many
	// locks are registered, but at least a second per run. The FIFO
	// spinlocks (locks.Kind.FIFOSpin) collapse under overcommit (a few thousand acquisitions a
	// run, however long), so they get the shortest run and the other
	// locks share the rest: the suite makes over 10^7 acquisitions here.
	names := locks.TortureNames()
	budget := 150 * time.Second
	if faults.Enabled {
		budget = 40 * time.Second
	}
	var native int
	for _, name := range names {
		if lk, _ := LookupLock(name); lk.FIFOSpin {
			native++
		}
	}
	shortRun := time.Second
	d := budget/2 - time.Duration(native)*shortRun
	d = min(15*time.Second, max(shortRun, d/time.Duration(max(1, len(names)-native))))
	if testing.Short() {
		d = shortRun
	}
	faults.Reset()
	var total uint64
	for _, oc := range []float64{2, 4} {
		for _, name := range names {
			lk, err := LookupLock(name)
			if err != nil {
				t.Fatal(err)
			}
			d := d
			if lk.FIFOSpin {
				d = shortRun
			}
			var out testkit.Buffer
			res, err := Run(context.Background(), Config{
				Lock: lk, Overcommit: oc, Duration: d, Interval: d / 4,
				Seed:     uint64(oc)*1000 + uint64(len(name)),
				LongHold: 2 * time.Millisecond, LongHoldEvery: 20000,
				Stutter: d / 5, Shuffle: d / 40, Out: &out,
				// Generous bounds: CI hosts are shared and overloaded, and a
				// halted waiter queued behind descheduled holders may sleep
				// long without any kick being lost. A lost kick still shows:
				// its waiter wakes only at the watchdog, even after the run.
				Watchdog: 3 * time.Second, StarveAfter: 2 * time.Second,
				// Short random work: more hand-offs, the events that race.
				Work: 8,
			})
			if err != nil {
				t.Fatalf("%s at %vx: %v", name, oc, err)
			}
			t.Logf("%s at %vx: %d acquisitions by %d vCPUs (per vCPU %v), %d stutters, %d shuffles, %d repins, %d long holds",
				name, oc, res.Acquisitions, res.VCPUs, res.PerVCPU, res.Stutters, res.Shuffles, res.Repins, res.LongHolds)
			if !res.OK() || res.Violations != 0 || res.LostWakeups != 0 || res.HaltTimeouts != 0 || (res.Starved != 0 && !lk.Unfair) || res.Stalls != 0 {
				// (an unfair lock such as tas promises nothing against starvation)
				t.Errorf("%s at %vx failed: %+v\n%s", name, oc, res, out.String())
				continue
			}
			if !strings.Contains(out.String(), "End of test: SUCCESS: "+name) || strings.Count(out.String(), "Max/Min:") < 4 {
				t.Errorf("%s at %vx: report lacks the interval lines or the SUCCESS line:\n%s", name, oc, out.String())
			}
			if res.Acquisitions == 0 || res.Stutters == 0 || res.Shuffles == 0 || res.Repins == 0 {
				t.Errorf("%s at %vx: the run did not exercise everything: %+v", name, oc, res)
			}
			// The PV locks' waiters halt under overcommit, and the watchdog
			// bounds every halt (plus the time to be scheduled again).
			if strings.HasPrefix(name, "pv-") && (res.LongestHalt <= 0 || res.LongestHalt > 3*time.Second+time.Second) {
				t.Errorf("%s at %vx: longest halt %v, want some halt, none past the 3s watchdog", name, oc, res.LongestHalt)
			}
			total += res.Acquisitions
		}
	}
	t.Logf("%d acquisitions in total", total)
	if faults.Enabled {
		for _, p := range []faults.Point{faults.TicketFlagRecheck, faults.TicketUnlockKick, faults.QspinHashHalt} {
			if faults.Hits(p) == 0 {
				t.Errorf("fault point %v was never reached by the PV runs", p)
			}
			t.Logf("fault point %v: %d hits", p, faults.Hits(p))
		}
	}
}

func TestDetectsMutualExclusionViolation(t *testing.T) {
	var out testkit.Buffer
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "leaky", New: func() sync.Locker { return new(leakyLock) }},
		Duration: 500 * time.Millisecond, Overcommit: 2, Out: &out, noPlain: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Violations == 0 || !strings.Contains(strings.Join(res.Failures, "; "), "mutual exclusion violated") {
		t.Fatalf("the leaky lock passed: %+v\n%s", res, out.String())
	}
	if !strings.Contains(out.String(), "End of test: FAILURE: leaky: mutual exclusion violated") {
		t.Fatalf("no FAILURE line:\n%s", out.String())
	}
}

func TestDetectsLostWakeup(t *testing.T) {
	before := pvlock.CurrentPolicy().HaltTimeout
	var out testkit.Buffer
	lk := newDroppyLock()
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "droppy", New: func() sync.Locker { return lk }, Stats: lk.stats},
		Duration: time.Second, Overcommit: 2, Watchdog: 50 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.LostWakeups == 0 || !strings.Contains(strings.Join(res.Failures, "; "), "lost wakeups") {
		t.Fatalf("the kick-dropping lock passed: %+v\n%s", res, out.String())
	}
	if res.Violations != 0 {
		t.Fatalf("the kick-dropping lock still excludes, yet %d violations were reported:\n%s", res.Violations, out.String())
	}
	if !strings.Contains(out.String(), "End of test: FAILURE: droppy") {
		t.Fatalf("no FAILURE line:\n%s", out.String())
	}
	if got := pvlock.CurrentPolicy().HaltTimeout; got != before {
		t.Fatalf("halt timeout %v after the run, %v before", got, before)
	}
}

func TestDetectsStarvationAndStall(t *testing.T) {
	var out testkit.Buffer
	lk := &starvingLock{delay: time.Second}
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "starving", New: func() sync.Locker { return lk }},
		Duration: 1500 * time.Millisecond, Overcommit: 2, Watchdog: 100 * time.Millisecond,
		StarveAfter: 200 * time.Millisecond, StallAfter: 600 * time.Millisecond,
		FailUnfair: true, Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Failures, "; ")
	for _, want := range []string{"starved", "stalled", "unfair"} {
		if !strings.Contains(all, want) {
			t.Errorf("failures lack %q: %+v\n%s", want, res, out.String())
		}
	}
	// Only the victim is kept out on purpose, but on a loaded host the
	// others may stall too: ask for at least one of each.
	if res.Starved < 1 || res.Stalls < 1 || !res.Unfair || res.Violations != 0 {
		t.Errorf("want a starved and a stalled wait, unfair and no violation: %+v\n%s", res, out.String())
	}
	if !strings.Contains(out.String(), "???") || !strings.Contains(out.String(), "End of test: FAILURE: starving") {
		t.Errorf("report lacks the ??? flag or the FAILURE line:\n%s", out.String())
	}
}

func TestUnfairLockStarvationIsNotAFailure(t *testing.T) {
	var out testkit.Buffer
	lk := &starvingLock{delay: time.Second}
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "starving-by-design", New: func() sync.Locker { return lk }, Unfair: true},
		Duration: 700 * time.Millisecond, Overcommit: 2, StarveAfter: 200 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Starved < 1 || !res.OK() {
		t.Fatalf("want a reported starvation and SUCCESS: %+v\n%s", res, out.String())
	}
}

func TestGivesUpOnStuckVCPUs(t *testing.T) {
	var out testkit.Buffer
	lk := &stuckLock{release: make(chan struct{})}
	start := time.Now()
	res, err := Run(context.Background(), Config{
		Lock: Lock{Name: "stuck", New: func() sync.Locker { return lk }},
		// The victim waits from the start, so it has stalled by the end of
		// the run; the stall period is long enough that the other vCPUs,
		// halted in the ticket lock, are woken within the grace period
		// that follows even on a loaded host.
		Duration: 1500 * time.Millisecond, Overcommit: 2, Watchdog: 100 * time.Millisecond,
		StallAfter: time.Second, Out: &out,
	})
	close(lk.release) // let the stuck vCPU go, so that its thread exits
	if err != nil {
		t.Fatal(err)
	}
	if res.Stuck != 1 || res.Stalls < 1 || res.OK() || time.Since(start) > time.Minute {
		t.Fatalf("want one stuck vCPU and a FAILURE, promptly: %v %+v\n%s", time.Since(start), res, out.String())
	}
	if !strings.Contains(out.String(), "1 vCPUs stuck in Lock") {
		t.Fatalf("report does not name the stuck vCPU:\n%s", out.String())
	}
}

func TestVCPUFailureEndsTheRun(t *testing.T) {
	lk := &panickyLock{n: 1000}
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "panicky", New: func() sync.Locker { return lk }},
		Duration: time.Hour, Overcommit: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(strings.Join(res.Failures, "; "), "panicked") || res.Elapsed > time.Minute {
		t.Fatalf("want the panic reported and the run ended: %+v", res)
	}
}

func TestCancelEndsTheRun(t *testing.T) {
	lk, err := LookupLock("pv-ticket")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, Config{Lock: lk, Duration: time.Hour, Stutter: 20 * time.Millisecond, Watchdog: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Minute || !res.OK() || res.Acquisitions == 0 {
		t.Fatalf("cancelled run: %v, %+v", el, res)
	}
}

func TestConfigErrors(t *testing.T) {
	lk, _ := LookupLock("sync.Mutex")
	ok := Config{Lock: lk, Duration: time.Second}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Lock = Lock{} }, "no lock"},
		{func(c *Config) { c.Duration = 0 }, "duration"},
		{func(c *Config) { c.Overcommit = -1 }, "overcommit"},
		{func(c *Config) { c.Overcommit = MaxOvercommit + 1 }, "overcommit"},
		{func(c *Config) { c.VCPUs = -2 }, "vCPUs"},
		{func(c *Config) { c.VCPUs = pvlock.MaxVCPUs + 1 }, "MaxVCPUs"},
		{func(c *Config) { c.Pinning = 9 }, "pinning"},
		{func(c *Config) { c.Interval = time.Microsecond }, "interval"},
		{func(c *Config) { c.Stutter = -time.Second }, "stutter"},
		{func(c *Config) { c.Shuffle = time.Nanosecond }, "shuffle"},
		{func(c *Config) { c.Work = -1 }, "work"},
		{func(c *Config) { c.LongHold = -1 }, "long hold"},
		{func(c *Config) { c.LongHoldEvery = -1 }, "long-hold-every"},
		{func(c *Config) { c.LongHold, c.Watchdog = time.Second, time.Second }, "watchdog"},
		{func(c *Config) { c.Watchdog, c.StallAfter = time.Second, time.Second }, "stall-after"},
		{func(c *Config) { c.CPUs = []int{-1} }, "negative"},
	} {
		cfg := ok
		c.mod(&cfg)
		_, err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, want an error containing %q", cfg, err, c.want)
		}
	}
}

func TestLookupLock(t *testing.T) {
	for _, name := range locks.TortureNames() {
		if _, err := LookupLock(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := LookupLock("nope"); err == nil || !strings.Contains(err.Error(), "pv-ticket-short") {
		t.Errorf("LookupLock(nope) = %v, want an error listing the locks the torture runs", err)
	}
	locks.Register(locks.Kind{Name: "test-untorturable", New: func() sync.Locker { return new(sync.Mutex) },
		TortureOnly: true, NoTorture: "a test says so"})
	if _, err := LookupLock("test-untorturable"); err == nil || !strings.Contains(err.Error(), "a test says so") {
		t.Errorf("LookupLock(test-untorturable) = %v, want the registry's reason", err)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
