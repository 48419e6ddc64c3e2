package pvlock

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// threadCount returns the number of OS threads of this process.
func threadCount(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("count threads: %v", err)
	}
	return len(tasks)
}

func threadAlive(tid int) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
	return err == nil
}

// TestVCPUThreadsAreReleased runs and stops a 16-vCPU VM several times:
// every vCPU thread must be gone after each run, and the process's
// thread count must come back to where it was.
func TestVCPUThreadsAreReleased(t *testing.T) {
	const vcpus, runs = 16, 5
	vm, err := NewVM(Config{VCPUs: vcpus})
	if err != nil {
		t.Fatal(err)
	}
	runOnce := func() []int {
		tids := make([]int, vcpus)
		var arrived sync.WaitGroup
		arrived.Add(vcpus)
		err := vm.Run(context.Background(), func(ctx context.Context, v *VCPU) error {
			tids[v.Index()] = v.threadID()
			arrived.Done()
			arrived.Wait() // all 16 threads exist at once
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return tids
	}
	// settle waits until pred holds, for up to 30s. A stopped vCPU's
	// thread exits as soon as it gets its CPU again; under the full test
	// suite (model checks compiling on both CPUs) that has taken over 5s.
	// A leaked thread never exits.
	settle := func(pred func() bool) bool {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if pred() {
				return true
			}
		}
		return pred()
	}

	// A first run lets the runtime grow the idle threads it keeps for the
	// raised GOMAXPROCS; the baseline is taken after it.
	runOnce()
	time.Sleep(50 * time.Millisecond)
	base := threadCount(t)
	// The runtime keeps idle threads for the Ps it had while GOMAXPROCS
	// was raised, and starts some for blocking system calls: up to 9 more
	// than the baseline here under load. A leak of vCPU threads would add
	// all 16 in one run, and run after run; each vCPU thread is also
	// checked by its ID above.
	const slack = vcpus - 1
	for i := 0; i < runs; i++ {
		tids := runOnce()
		seen := map[int]bool{}
		for _, tid := range tids {
			if tid == 0 || seen[tid] {
				t.Fatalf("run %d: vCPU threads not distinct: %v", i, tids)
			}
			// Go parks the main thread for good, rather than end it, when
			// a goroutine locked to it exits.
			if tid == os.Getpid() {
				t.Fatalf("run %d: a vCPU ran on the process's main thread", i)
			}
			seen[tid] = true
		}
		if !settle(func() bool {
			for _, tid := range tids {
				if threadAlive(tid) {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("run %d: vCPU threads %v still exist after the VM stopped", i, tids)
		}
		if !settle(func() bool { return threadCount(t) <= base+slack }) {
			t.Fatalf("run %d: %d threads after the VM stopped, %d before the runs", i, threadCount(t), base)
		}
	}
	t.Logf("threads: %d before, %d after %d runs of %d vCPUs", base, threadCount(t), runs, vcpus)
}
