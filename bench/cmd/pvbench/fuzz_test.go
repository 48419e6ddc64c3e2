package main

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/torture"
	"github.com/pvlock/pvlock/pvlock"
)

// Fuzz inputs are argument lists joined by NUL bytes.
func fuzzArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// FuzzParse checks that pvbench's flag parser never panics and that every
// configuration it accepts is one the lab can run.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "-oc\x001,2", "-oc\x00Inf", "-oc\x00NaN", "-oc\x00-1", "-oc\x001e308,2",
		"-locks\x00pv-ticket,sync.Mutex", "-locks\x00,", "-runs\x000", "-runs\x00-3",
		"-duration\x00-1s", "-duration\x001h", "-cpus\x00-1", "-cpus\x000,1", "-pin\x00float",
		"-workload\x00lockloop", "-oc\x001,1", "-oc\x001e-9", "-json\x00/dev/null", "extra", "-h",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := parse(fuzzArgs(s), io.Discard)
		if err != nil {
			return
		}
		if _, err := bench.WorkloadByName(o.workload); err != nil {
			t.Fatalf("accepted unknown workload %q", o.workload)
		}
		if len(o.locks) == 0 || len(o.factors) == 0 {
			t.Fatalf("accepted empty locks %v or factors %v", o.locks, o.factors)
		}
		for _, l := range o.locks {
			if _, err := locks.Lookup(l); err != nil {
				t.Fatalf("accepted unknown lock %q", l)
			}
		}
		for _, v := range o.factors {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("accepted overcommit factor %v", v)
			}
		}
		for _, c := range o.cpus {
			if c < 0 {
				t.Fatalf("accepted CPU %d", c)
			}
		}
		if o.runs < 1 || o.duration <= 0 || (o.pinning != pvlock.PinEach && o.pinning != pvlock.PinFloat) {
			t.Fatalf("accepted runs %d, duration %v, pinning %v", o.runs, o.duration, o.pinning)
		}
	})
}

// FuzzParseTorture checks that "pvbench torture"'s flag parser never
// panics and that every configuration it accepts is valid and complete.
func FuzzParseTorture(f *testing.F) {
	for _, seed := range []string{
		"", "-lock\x00sync.Mutex", "-oc\x008", "-oc\x00Inf", "-oc\x000", "-vcpus\x005000",
		"-duration\x0010m", "-duration\x000", "-interval\x001ns", "-interval\x001h",
		"-stutter\x001ms", "-shuffle\x000", "-long-hold\x001s", "-long-hold\x001s\x00-watchdog\x002s",
		"-watchdog\x001ms", "-stall-after\x001s", "-starve-after\x0010ms", "-work\x0065536",
		"-long-hold-every\x001", "-oc\x001,2,4", "-oc\x001,1", "-cpus\x000,1", "-cpus\x00-1", "-seed\x0042", "-fail-unfair", "-h",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfgs, err := parseTorture(fuzzArgs(s), io.Discard)
		if err != nil {
			return
		}
		if len(cfgs) == 0 {
			t.Fatal("accepted a torture of no configuration")
		}
		for _, c := range cfgs {
			if _, err := torture.LookupLock(c.Lock.Name); err != nil || c.Lock.New == nil {
				t.Fatalf("accepted lock %q", c.Lock.Name)
			}
			if c.VCPUs < 0 || c.VCPUs > pvlock.MaxVCPUs || (c.VCPUs == 0 && !(c.Overcommit > 0 && c.Overcommit <= torture.MaxOvercommit)) {
				t.Fatalf("accepted vCPUs %d, overcommit %v", c.VCPUs, c.Overcommit)
			}
			if c.Duration <= 0 || c.Interval <= 0 || c.Interval > c.Duration {
				t.Fatalf("accepted duration %v, interval %v", c.Duration, c.Interval)
			}
			if c.Work < 1 || c.Work > torture.MaxWork || c.LongHold < 0 || c.LongHoldEvery < 1 || c.Stutter < 0 || c.Shuffle < 0 {
				t.Fatalf("accepted work %d, long hold %v every %d, stutter %v, shuffle %v", c.Work, c.LongHold, c.LongHoldEvery, c.Stutter, c.Shuffle)
			}
			if c.Watchdog <= c.LongHold || c.StallAfter <= c.Watchdog || c.StarveAfter <= 0 || c.Out == nil {
				t.Fatalf("accepted watchdog %v, stall-after %v, starve-after %v for long hold %v", c.Watchdog, c.StallAfter, c.StarveAfter, c.LongHold)
			}
			for _, cpu := range c.CPUs {
				if cpu < 0 {
					t.Fatalf("accepted CPU %d", cpu)
				}
			}
			if c.Pinning != pvlock.PinEach && c.Pinning != pvlock.PinFloat {
				t.Fatalf("accepted pinning %v", c.Pinning)
			}
		}
	})
}
