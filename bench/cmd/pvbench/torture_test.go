package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/torture"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/pvlock"
)

// A lock whose statistics claim a lost wake-up on every look: the
// torture must end in FAILURE and pvbench must say so with an error.
var lossyLooks atomic.Uint64

func init() {
	locks.Register(locks.Kind{Name: "test-lossy-stats", TortureOnly: true, New: func() sync.Locker { return new(sync.Mutex) },
		Stats: func() (uint64, uint64) { n := lossyLooks.Add(1); return n, n }})
}

func TestTortureSubcommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run([]string{"torture", "-lock", "pv-ticket", "-oc", "2", "-duration", "600ms", "-interval", "200ms",
		"-stutter", "150ms", "-shuffle", "20ms", "-seed", "7", "-long-hold", "1ms", "-long-hold-every", "1000"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"torture pv-ticket:", "seed 7", "Max/Min:", "Stutters:", "End of test: SUCCESS: pv-ticket"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "Max/Min:"); n < 4 {
		t.Errorf("%d statistics lines, want 3 intervals and the summary:\n%s", n, out.String())
	}
}

func TestTortureFailureIsAnError(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"torture", "-lock", "test-lossy-stats", "-duration", "100ms"}, &out, &bytes.Buffer{})
	if !errors.Is(err, errTortureFailed) || !strings.Contains(err.Error(), "lost wakeups") {
		t.Fatalf("run = %v, want a torture FAILURE naming the lost wakeups\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "End of test: FAILURE: test-lossy-stats") {
		t.Fatalf("no FAILURE line:\n%s", out.String())
	}
}

func TestParseTorture(t *testing.T) {
	for _, args := range [][]string{
		{"-lock", "nope"}, {"-oc", "0"}, {"-oc", "-2"}, {"-oc", "NaN"}, {"-oc", "1e9"}, {"-vcpus", "-1"},
		{"-duration", "0"}, {"-interval", "1ns"}, {"-stutter", "-1s"}, {"-shuffle", "10us"},
		{"-long-hold", "-1ms"}, {"-long-hold-every", "-5"}, {"-work", "-1"}, {"-work", "1000000"},
		{"-watchdog", "10ms", "-long-hold", "20ms"}, {"-stall-after", "1s", "-watchdog", "2s"},
		{"-cpus", "x"}, {"-cpus", "-1"}, {"-pin", "sideways"}, {"extra"}, {"-nosuchflag"},
		{"-oc", "1,1"}, {"-oc", "1e-9"}, {"-oc", "2,x"}, {"-oc", ","}, {"-vcpus", "4", "-oc", "1,2"},
	} {
		if _, err := parseTorture(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseTorture(%q) accepted", args)
		}
	}
	cfgs, err := parseTorture([]string{"-duration", "10m", "-oc", "8", "-pin", "float", "-seed", "0"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 {
		t.Fatalf("-oc 8 made %d configurations", len(cfgs))
	}
	c := cfgs[0]
	if c.Lock.Name != "pv-ticket" || c.Duration != 10*time.Minute || c.Overcommit != 8 || c.Pinning != pvlock.PinFloat ||
		c.Seed != 0 || c.Interval != 10*time.Second || c.Watchdog != torture.DefaultWatchdog || c.Shuffle <= 0 || c.Stutter <= 0 {
		t.Fatalf("parsed %+v", c)
	}
	// -oc takes a list, like the lab's: one run per factor.
	cfgs, err = parseTorture([]string{"-oc", "1, 2,4", "-cpus", "0"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 || cfgs[0].Overcommit != 1 || cfgs[1].Overcommit != 2 || cfgs[2].Overcommit != 4 || cfgs[2].Seed != cfgs[0].Seed {
		t.Fatalf("-oc 1,2,4 parsed as %d configurations %+v", len(cfgs), cfgs)
	}
	if err := run([]string{"torture", "-h"}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("torture -h: %v", err)
	}
}

// A torture stopped by a signal is not a passed torture: the report ends
// INTERRUPTED, never SUCCESS, and pvbench exits non-zero.
func TestTortureSIGINTIsNotSuccess(t *testing.T) {
	var out testkit.Buffer
	err := interrupt(t, []string{"torture", "-lock", "pv-ticket", "-oc", "2,4", "-duration", "1m", "-interval", "100ms"},
		&out, io.Discard, func() {
			// The header line is printed after pvbench installed its handler.
			out.WaitFor(t, "torture pv-ticket:")
			time.Sleep(200 * time.Millisecond)
		})
	if !errors.Is(err, errTortureInterrupted) || !strings.Contains(err.Error(), "run 1 of 2") {
		t.Errorf("run = %v, want the interrupt of run 1 of 2 as an error", err)
	}
	s := out.String()
	if strings.Contains(s, "SUCCESS") || !strings.Contains(s, "End of test: INTERRUPTED: pv-ticket") {
		t.Errorf("report after SIGINT:\n%s", s)
	}
	if strings.Count(s, "torture pv-ticket:") != 1 {
		t.Errorf("the torture went on to the next factor after SIGINT:\n%s", s)
	}
}
