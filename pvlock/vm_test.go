//go:build linux

package pvlock

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfigErrors(t *testing.T) {
	cpus, err := HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{VCPUs: 0}, "at least one vCPU"},
		{Config{VCPUs: -3}, "at least one vCPU"},
		{Config{VCPUs: MaxVCPUs + 1}, "exceed the limit"},
		{Config{VCPUs: 2, CPUs: []int{cpus[len(cpus)-1] + 1000}}, "not in this process's allowed set"},
		{Config{VCPUs: 2, CPUs: []int{-1}}, "negative"},
		{Config{VCPUs: 2, CPUs: []int{cpus[0], cpus[0]}}, "listed twice"},
		{Config{VCPUs: 2, Pinning: Pinning(7)}, "unknown pinning"},
	}
	for _, c := range cases {
		_, err := NewVM(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewVM(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	for _, f := range []float64{0, -1} {
		if _, err := Overcommit(f, nil); err == nil {
			t.Errorf("Overcommit(%v) accepted", f)
		}
	}
	cfg, err := Overcommit(2, []int{cpus[0]})
	if err != nil || cfg.VCPUs != 2 {
		t.Fatalf("Overcommit(2, one CPU) = %+v, %v", cfg, err)
	}
	cfg, err = Overcommit(0.5, nil)
	if err != nil || cfg.VCPUs != max(1, (len(cpus)+1)/2) {
		t.Fatalf("Overcommit(0.5) = %+v, %v", cfg, err)
	}
}

// TestVCPUsArePinnedAndLocked checks that every vCPU runs on its own
// thread, pinned as configured, and that GOMAXPROCS covers the vCPUs.
func TestVCPUsArePinnedAndLocked(t *testing.T) {
	cpus, _ := HostCPUs()
	for _, pin := range []Pinning{PinEach, PinFloat} {
		vm, err := NewVM(Config{VCPUs: 3 * len(cpus), Pinning: pin})
		if err != nil {
			t.Fatal(err)
		}
		before := runtime.GOMAXPROCS(0)
		tids := make([]int64, len(vm.VCPUs()))
		err = vm.Run(context.Background(), func(ctx context.Context, v *VCPU) error {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(0, &set); err != nil {
				return err
			}
			if pin == PinEach && (set.Count() != 1 || !set.IsSet(v.CPU())) {
				return errors.New("vCPU not pinned to its home CPU")
			}
			if pin == PinFloat && set.Count() != len(cpus) {
				return errors.New("floating vCPU not allowed on every CPU")
			}
			if unix.Gettid() != v.threadID() {
				return errors.New("TID does not match the running thread")
			}
			if g := runtime.GOMAXPROCS(0); g < len(vm.VCPUs()) {
				return errors.New("GOMAXPROCS below the vCPU count")
			}
			if v.Waiter() == nil || v.id < 0 {
				return errors.New("vCPU has no waiter or slot")
			}
			tids[v.Index()] = int64(v.threadID())
			return nil
		})
		if err != nil {
			t.Fatalf("%v: %v", pin, err)
		}
		seen := map[int64]bool{}
		for _, tid := range tids {
			if tid == 0 || seen[tid] {
				t.Fatalf("%v: vCPU threads not distinct: %v", pin, tids)
			}
			seen[tid] = true
		}
		if after := runtime.GOMAXPROCS(0); after != before {
			t.Fatalf("GOMAXPROCS %d after the run, %d before", after, before)
		}
	}
}

func TestRunCancelAndErrors(t *testing.T) {
	vm, err := NewVM(Config{VCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	// The workload cancels the run itself once it has spun a while, so a
	// loaded host that starts the threads late cannot end it beforehand.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var spins atomic.Int64
	if err := vm.Run(ctx, func(ctx context.Context, v *VCPU) error {
		for ctx.Err() == nil {
			if spins.Add(1) == 100_000 {
				cancel()
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if spins.Load() == 0 {
		t.Fatal("workload never ran")
	}
	boom := errors.New("boom")
	err = vm.Run(context.Background(), func(ctx context.Context, v *VCPU) error {
		if v.Index() == 2 {
			return boom
		}
		<-ctx.Done() // the failure of vCPU 2 must cancel the others
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "vCPU 2") {
		t.Fatalf("Run = %v, want boom from vCPU 2", err)
	}
	err = vm.Run(context.Background(), func(ctx context.Context, v *VCPU) error {
		if v.Index() == 1 {
			panic("bad workload")
		}
		<-ctx.Done()
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Run = %v, want the panic reported", err)
	}
}

func TestRunAllSharesHost(t *testing.T) {
	var vms []*VM
	for i := 0; i < 3; i++ {
		vm, err := NewVM(Config{VCPUs: 3})
		if err != nil {
			t.Fatal(err)
		}
		vms = append(vms, vm)
	}
	var running, peak atomic.Int64
	// The last vCPU to start ends the run; the timeout only bounds a run
	// in which some never start.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := RunAll(ctx, func(ctx context.Context, v *VCPU) error {
		n := running.Add(1)
		if n == 9 {
			cancel()
		}
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-ctx.Done()
		running.Add(-1)
		return nil
	}, vms...)
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 9 {
		t.Fatalf("peak of %d vCPUs running at once, want 9 (3 VMs x 3)", peak.Load())
	}
}

// TestStealIsMeasured overcommits one CPU 4x with busy vCPUs: each must
// see run-queue wait.
func TestStealIsMeasured(t *testing.T) {
	cpus, _ := HostCPUs()
	vm, err := NewVM(Config{VCPUs: 4, CPUs: cpus[:1]})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := vm.Run(ctx, func(ctx context.Context, v *VCPU) error {
		for ctx.Err() == nil {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, v := range vm.VCPUs() {
		total += v.Steal()
	}
	if total < 50*time.Millisecond {
		t.Fatalf("4 busy vCPUs on one CPU for 200ms stole only %v in total", total)
	}
}

// TestDocumentedConstants pins the values the docs of the constants that
// come from the lock core state.
func TestDocumentedConstants(t *testing.T) {
	if DefaultHaltTimeout != time.Second || MaxVCPUs != 4096 || DefaultSpinThreshold != 1<<15 {
		t.Fatalf("DefaultHaltTimeout %v, MaxVCPUs %d, DefaultSpinThreshold %d",
			DefaultHaltTimeout, MaxVCPUs, DefaultSpinThreshold)
	}
}
