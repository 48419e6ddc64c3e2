//go:build linux

package affinity

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pinned runs Pin(cpus) on a thread of its own, which ends with it, and
// returns Pin's error and the thread's affinity afterwards.
func pinned(cpus []int) (error, unix.CPUSet) {
	type result struct {
		err error
		set unix.CPUSet
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread ends here
		var r result
		r.err = Pin(cpus)
		unix.SchedGetaffinity(0, &r.set)
		ch <- r
	}()
	r := <-ch
	return r.err, r.set
}

func TestPinOneCPU(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := range len(allowed) * 64 {
		if allowed.IsSet(c) {
			cpu = c
		}
	}
	err, set := pinned([]int{cpu})
	if err != nil {
		t.Fatal(err)
	}
	if set.Count() != 1 || !set.IsSet(cpu) {
		t.Fatalf("affinity after Pin([%d]): %d CPUs, CPU %d set %v", cpu, set.Count(), cpu, set.IsSet(cpu))
	}
}

func TestPinRefusalSaysWhy(t *testing.T) {
	// No CPU in range: an empty set, which the kernel refuses as EINVAL.
	err, _ := pinned([]int{1 << 20})
	if err == nil || !strings.Contains(err.Error(), "cgroup cpuset or offline") {
		t.Fatalf("Pin to no CPU: %v, want EINVAL with its hint", err)
	}
}
