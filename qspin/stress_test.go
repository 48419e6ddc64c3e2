package qspin

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// overcommits are the vCPU counts of the stress tests: 1x, 2x and 4x the
// host CPUs, and 256 vCPUs (at least 64x on the 2-CPU CI machines).
func overcommits(t *testing.T) []int {
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	return []int{len(cpus), 2 * len(cpus), 4 * len(cpus), max(256, 4*len(cpus))}
}

// TestStressVCPUs checks every variant on pinned vCPUs at 1x, 2x and 4x,
// and the PV variants with 256 vCPUs, all hammering one lock: mutual
// exclusion, every acquisition counted, no halt timeout and no lost
// wake-up, no leaked hash entry or node, and that PV waiters really halted
// and were kicked.
func TestStressVCPUs(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 200 * time.Millisecond
	}
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants() {
		for _, n := range overcommits(t) {
			if n > 4*len(cpus) && !(v.mode == ModePV || v.mode == ModePVNoSteal) {
				// Hundreds of spinning vCPUs: see TestStressManyVCPUs.
				continue
			}
			t.Run(fmt.Sprintf("%s/%dvcpus", v.name, n), func(t *testing.T) {
				l := New(v.opts...)
				r := stressVCPUs(t, l, n, d)
				logResult(t, r)
				checkPVActivity(t, l, r, n > len(cpus))
			})
		}
	}
}

// TestStressManyVCPUs runs every variant on 256 vCPUs (at least 64 per
// CPU on 2 CPUs), each vCPU taking the lock in turns of a few
// acquisitions with 2 vCPUs per CPU contending at once. TestStressVCPUs
// also runs the PV variants with all 256 vCPUs contending at once.
func TestStressManyVCPUs(t *testing.T) {
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	n := overcommits(t)[3]
	rounds, iters := 3, 16
	if testing.Short() {
		rounds, iters = 1, 8
	}
	for _, v := range variants() {
		active := 2 * len(cpus)
		if v.mode == ModeNative {
			// Native waiters never yield their CPU, so with more of
			// them than CPUs the helper threads that pass turns
			// between parked vCPUs wait for time slices (18 s for
			// this test at 2x): keep them at 1x.
			active = len(cpus)
		}
		t.Run(fmt.Sprintf("%s/%dvcpus", v.name, n), func(t *testing.T) {
			l := New(v.opts...)
			r := stressVCPUsGated(t, l, n, active, rounds, iters)
			logResult(t, r)
			checkPVActivity(t, l, r, false)
		})
	}
}

// checkPVActivity asserts that non-PV variants never halted, that a lock
// without stealing never stole and, with wantHalts, that a PV run
// exercised the PV slow path: with more vCPUs hammering the lock than CPUs
// and a short spin threshold, waiters must halt and be kicked by unlocks.
func checkPVActivity(t *testing.T, l *Lock, r stressResult, wantHalts bool) {
	t.Helper()
	d := r.delta
	switch {
	case !l.PV():
		if n := d.Get(Halts); n != 0 {
			t.Errorf("%v lock halted %d times", l.Mode(), n)
		}
	case wantHalts:
		if d.Get(Halts) == 0 || d.Get(PVKickUnlock) == 0 {
			t.Errorf("%v: halts %d, kicks at unlock %d; want both > 0",
				l.Mode(), d.Get(Halts), d.Get(PVKickUnlock))
		}
	}
	if l.Mode() == ModePVNoSteal && d.Get(PVLockStealing) != 0 {
		t.Errorf("lock without stealing stole %d times", d.Get(PVLockStealing))
	}
}

// TestStressGoroutines runs every variant from plain goroutines, which use
// pooled nodes and park instead of halting their thread.
func TestStressGoroutines(t *testing.T) {
	iters := 3000
	if testing.Short() {
		iters = 1000
	}
	for _, v := range variants() {
		counts := []int{2, 8, 64}
		if v.mode == ModeNative {
			// Native waiters spin in FIFO order, so every hand-off to a
			// goroutine that is not running waits for the Go scheduler
			// to preempt a spinner (10 ms): more goroutines than Ps is
			// the lock-waiter preemption collapse, not a test.
			counts = []int{runtime.GOMAXPROCS(0)}
		}
		iters := iters
		if v.mode == ModeNative {
			iters /= 3 // a GC worker taking a P makes even this slow
		}
		for _, g := range counts {
			t.Run(fmt.Sprintf("%s/%dgoroutines", v.name, g), func(t *testing.T) {
				l := New(v.opts...)
				r := stressGoroutines(t, l, g, iters)
				logResult(t, r)
				if l.PV() && g >= 64 && r.delta.Get(Halts) == 0 {
					t.Errorf("%v with %d goroutines never parked", l.Mode(), g)
				}
			})
		}
	}
}

// TestZeroValueFromGoroutines uses a zero Lock (PV, default threshold)
// from plain goroutines.
func TestZeroValueFromGoroutines(t *testing.T) {
	var l Lock
	if l.Mode() != ModePV {
		t.Fatalf("zero Lock mode %v, want pv", l.Mode())
	}
	r := stressGoroutines(t, &l, 16, 2000)
	logResult(t, r)
}

// TestStressPVThresholds runs the PV variants at 4x with spin thresholds
// from "halt at once" to long, shifting which races of the PV protocol
// (wait-early, kick_node versus a waking node, a head halting while its
// lock is released or stolen) dominate.
func TestStressPVThresholds(t *testing.T) {
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	d := 500 * time.Millisecond
	if testing.Short() {
		d = 100 * time.Millisecond
	}
	for _, th := range []uint32{1, 16, 1024} {
		for _, opts := range [][]Option{nil, {NoStealing()}} {
			l := New(append(opts, SpinThreshold(th))...)
			t.Run(fmt.Sprintf("%v/threshold%d", l.Mode(), th), func(t *testing.T) {
				r := stressVCPUs(t, l, 4*len(cpus), d)
				logResult(t, r)
				checkPVActivity(t, l, r, true)
			})
		}
	}
}
