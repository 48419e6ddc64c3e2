package pvlock

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// runWithin runs fn on vm and fails the test if the run has not returned
// after d (the goroutine is then left to goleak, which names it).
func runWithin(t *testing.T, vm *VM, d time.Duration, fn Workload) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- vm.Run(context.Background(), fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Run has not returned %v after a vCPU's workload ended", d)
		return nil
	}
}

// TestGoexitEndsTheRun: a workload that exits by runtime.Goexit, as
// t.Fatal does on a vCPU, fails its vCPU and cancels the others, whose
// workloads wait for the cancellation: the run returns ErrGoexit at once
// instead of hanging, and the VM can run again.
func TestGoexitEndsTheRun(t *testing.T) {
	vm, err := NewVM(Config{VCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = runWithin(t, vm, 10*time.Second, func(ctx context.Context, v *VCPU) error {
		if v.Index() == 1 {
			runtime.Goexit()
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, ErrGoexit) || !strings.Contains(err.Error(), "vCPU 1 of "+vm.Name()) {
		t.Fatalf("Run = %v, want ErrGoexit from vCPU 1", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the run took %v to end after the Goexit", d)
	}
	// A lone vCPU that exits so is an error too, not a clean run.
	one, err := NewVM(Config{VCPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := runWithin(t, one, 10*time.Second, func(ctx context.Context, v *VCPU) error {
		runtime.Goexit()
		return nil
	}); !errors.Is(err, ErrGoexit) {
		t.Fatalf("Run of one vCPU = %v, want ErrGoexit", err)
	}
	// The failed runs gave back their vCPU slots and Ps.
	if err := runWithin(t, vm, 10*time.Second, func(ctx context.Context, v *VCPU) error { return nil }); err != nil {
		t.Fatalf("Run after the Goexit = %v", err)
	}
}

//go:noinline
func explode(v *VCPU) {
	if v.Index() == 2 {
		panic("boom")
	}
}

var errBoom = errors.New("boom error")

// TestPanicKeepsItsStack: a panic comes back as a *PanicError that names
// the vCPU, keeps the value and the stack of the panicking goroutine (down
// to the function that panicked), and unwraps to the value if it is an
// error.
func TestPanicKeepsItsStack(t *testing.T) {
	vm, err := NewVM(Config{VCPUs: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = runWithin(t, vm, 10*time.Second, func(ctx context.Context, v *VCPU) error {
		explode(v)
		<-ctx.Done()
		return nil
	})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run = %v, want a *PanicError", err)
	}
	if pe.VCPU != 2 || pe.VM != vm.Name() || pe.Value != "boom" {
		t.Errorf("PanicError = {VM %q, VCPU %d, Value %v}, want vCPU 2 of %s, boom", pe.VM, pe.VCPU, pe.Value, vm.Name())
	}
	msg := err.Error()
	first, stack, _ := strings.Cut(msg, "\n")
	if want := "pvlock: vCPU 2 of " + vm.Name() + " panicked: boom"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	for _, frame := range []string{"goroutine ", "panic(", "pvlock.explode(", "goexit_test.go:"} {
		if !strings.Contains(stack, frame) {
			t.Errorf("the error's stack has no %q:\n%s", frame, msg)
		}
	}
	if !strings.Contains(string(pe.Stack), "pvlock.explode(") {
		t.Errorf("PanicError.Stack does not reach the panicking function:\n%s", pe.Stack)
	}

	err = runWithin(t, vm, 10*time.Second, func(ctx context.Context, v *VCPU) error {
		panic(errBoom)
	})
	if !errors.Is(err, errBoom) || !errors.As(err, &pe) {
		t.Fatalf("Run = %v, want a *PanicError that unwraps to errBoom", err)
	}
}
