package faults

import (
	"testing"
	"time"
)

func TestInjectCountsOnlyWhenEnabled(t *testing.T) {
	Reset()
	defer Reset()
	Set(TicketUnlockKick, Fault{}) // count only: keep the test fast
	defer Set(TicketUnlockKick, DefaultFault)
	for i := 0; i < 1000; i++ {
		Inject(TicketUnlockKick)
	}
	Inject(NumPoints + 3) // unknown points are ignored
	want := uint64(0)
	if Enabled {
		want = 1000
	}
	if got := Hits(TicketUnlockKick); got != want {
		t.Fatalf("Hits = %d after 1000 Injects, want %d (Enabled=%v)", got, want, Enabled)
	}
	if Hits(TicketFlagRecheck) != 0 || Hits(NumPoints+3) != 0 {
		t.Fatal("hits counted on a point that was not injected")
	}
}

func TestInjectDelays(t *testing.T) {
	Set(QspinHashHalt, Fault{SleepOneIn: 1, MaxSleep: time.Millisecond})
	defer Set(QspinHashHalt, DefaultFault)
	Set(TicketFlagRecheck, Fault{YieldOneIn: 1})
	defer Set(TicketFlagRecheck, DefaultFault)
	Set(TicketUnlockKick, Fault{SpinOneIn: 1, MaxSpin: 100})
	defer Set(TicketUnlockKick, DefaultFault)
	Reset()
	defer Reset()
	start := time.Now()
	for i := 0; i < 200; i++ {
		Inject(QspinHashHalt)
		Inject(TicketFlagRecheck)
		Inject(TicketUnlockKick)
	}
	// 200 sleeps of a random share of 1ms add up to well over 10ms when
	// faults are compiled in. Without the tag nothing may sleep, but a
	// time bound would measure the machine's load: there the delays must
	// not even have been counted.
	if Enabled {
		if d := time.Since(start); d < 10*time.Millisecond {
			t.Fatalf("200 one-in-one sleeps took only %v", d)
		}
		return
	}
	for p := Point(0); p < NumPoints; p++ {
		if Hits(p) != 0 {
			t.Fatalf("faults compiled out, yet %v counted %d hits", p, Hits(p))
		}
	}
}

func TestInjectDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { Inject(TicketFlagRecheck) }); n != 0 {
		t.Fatalf("Inject allocates %v times per call", n)
	}
}

func TestNamesAndMisuse(t *testing.T) {
	seen := map[string]bool{}
	for p := Point(0); p < NumPoints; p++ {
		s := p.String()
		if s == "" || seen[s] {
			t.Fatalf("point %d has an empty or duplicate name %q", p, s)
		}
		seen[s] = true
	}
	if NumPoints.String() != "Point(3)" {
		t.Fatalf("unknown point prints as %q", NumPoints.String())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Set of an unknown point did not panic")
		}
	}()
	Set(NumPoints, Fault{})
}

func BenchmarkInject(b *testing.B) {
	b.ReportAllocs()
	Set(TicketUnlockKick, Fault{})
	defer Set(TicketUnlockKick, DefaultFault)
	for b.Loop() {
		Inject(TicketUnlockKick)
	}
}
