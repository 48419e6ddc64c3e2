//go:build linux

package pvlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRepin(t *testing.T) {
	cpus, err := HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := NewVM(Config{VCPUs: 2, Pinning: PinFloat})
	if err != nil {
		t.Fatal(err)
	}
	err = vm.Run(context.Background(), func(ctx context.Context, v *VCPU) error {
		target := cpus[(v.Index()+1)%len(cpus)]
		if err := v.Repin([]int{target}); err != nil {
			return err
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			return err
		}
		if set.Count() != 1 || !set.IsSet(target) {
			return fmt.Errorf("after Repin([%d]) the thread may run on %d CPUs", target, set.Count())
		}
		for _, bad := range [][]int{nil, {-1}, {1 << 20}} {
			if err := v.Repin(bad); err == nil {
				return fmt.Errorf("Repin(%v) accepted", bad)
			}
		}
		if len(cpus) < 1000 {
			// In range for the CPU set, but not a CPU this process may use.
			if err := v.Repin([]int{1000}); err == nil || !strings.Contains(err.Error(), "sched_setaffinity") {
				return fmt.Errorf("Repin to a disallowed CPU = %v", err)
			}
		}
		if err := vm.VCPUs()[1-v.Index()].Repin(cpus); err == nil {
			return errors.New("Repin of another vCPU's thread accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.VCPUs()[0].Repin(cpus); err == nil {
		t.Fatal("Repin of a stopped vCPU accepted")
	}
}
