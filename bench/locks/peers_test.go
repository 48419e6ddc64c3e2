package locks

import (
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
)

// TestPeerLocksUnderOvercommit: the lab's own locks keep mutual exclusion
// at 2x and 4x, with long holds that get holders preempted, and with a
// preemptable ticket lock whose unit is so small that nearly every waiter
// times out into the unordered phase.
func TestPeerLocksUnderOvercommit(t *testing.T) {
	peers := []struct {
		name string
		new  func() sync.Locker
	}{
		{"ple-yield", func() sync.Locker { return new(PLEYield) }},
		{"ple-yield-tiny-window", func() sync.Locker { return &PLEYield{Window: time.Nanosecond} }},
		{"preemptable-ticket", func() sync.Locker { return new(PreemptableTicket) }},
		{"preemptable-ticket-unit-1", func() sync.Locker { return &PreemptableTicket{TimeoutUnit: 1} }},
	}
	for _, p := range peers {
		for _, oc := range []float64{2, 4} {
			res, err := locktest.Stress(p.new(), locktest.Config{Overcommit: oc, Iterations: 20000,
				Deadline: testkit.Short(time.Second, 2*time.Second), Work: 50,
				LongHoldEvery: 200, LongHold: 50 * time.Microsecond})
			if err != nil {
				t.Fatalf("%s at %gx: %v", p.name, oc, err)
			}
			if res.Acquisitions < res.VCPUs {
				t.Fatalf("%s at %gx: only %d acquisitions by %d vCPUs", p.name, oc, res.Acquisitions, res.VCPUs)
			}
		}
	}
}

// TestPreemptableTicketSurvivesPreemptedWaiter plays lock-waiter
// preemption to the end: a ticket is taken by a waiter that never comes
// back. A plain ticket lock would hang every later locker; the preemptable
// one times out of the line and still takes the lock.
func TestPreemptableTicketSurvivesPreemptedWaiter(t *testing.T) {
	l := &PreemptableTicket{TimeoutUnit: 64}
	before := PreemptableTicketStats().Snapshot()
	l.tail.Add(1) // the vanished waiter's ticket
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			l.Lock()
			l.Unlock()
		}
	}()
	testkit.Receive(t, done, 10*time.Second, "Lock hung behind a waiter that never runs")
	d := PreemptableTicketStats().Snapshot().Sub(before)
	if d.Get("timeouts") < 1 {
		t.Fatalf("no timeout counted: %v", d.Events)
	}
}

func TestPreemptableTicketFIFOWhenLineMoves(t *testing.T) {
	l := new(PreemptableTicket)
	before := PreemptableTicketStats().Snapshot()
	l.Lock()
	l.Unlock()
	l.Lock()
	got := make(chan struct{})
	go func() { l.Lock(); close(got); l.Unlock() }()
	waitFor(t, func() bool { return l.tail.Load() == 3 }) // the waiter is in line behind us
	l.Unlock()
	<-got
	d := PreemptableTicketStats().Snapshot().Sub(before)
	if d.Get("acquired_fast") < 2 || d.Get("acquired_ordered")+d.Get("timeouts") < 1 {
		t.Fatalf("events %v", d.Events)
	}
}

func TestPLEYieldYields(t *testing.T) {
	l := &PLEYield{Window: time.Microsecond}
	before := PLEYieldStats().Snapshot()
	l.Lock()
	got := make(chan struct{})
	go func() { l.Lock(); close(got); l.Unlock() }()
	// Hold the lock until the waiter has given up the CPU at least once.
	waitFor(t, func() bool { return PLEYieldStats().Snapshot().Sub(before).Get("yields") > 0 })
	l.Unlock()
	<-got
	d := PLEYieldStats().Snapshot().Sub(before)
	if d.Get("yields") == 0 || d.Get("acquired_slow") != 1 || d.Get("acquired_fast") != 1 {
		t.Fatalf("events %v", d.Events)
	}
}

func TestPeerLocksPanicOnBadUnlock(t *testing.T) {
	for _, l := range []sync.Locker{new(PLEYield), new(PreemptableTicket)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%T: unlock of unlocked lock did not panic", l)
				}
			}()
			l.Unlock()
		}()
	}
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !testkit.Eventually(10*time.Second, cond, nil) {
		t.Fatal("condition not reached in 10s")
	}
}
