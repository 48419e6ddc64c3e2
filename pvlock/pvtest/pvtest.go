// Package pvtest runs a user's own tests and benchmarks on pinned,
// overcommitted vCPUs: the pvlock runtime's VMs, packaged for the testing
// package.
//
// RunParallel is testing.B.RunParallel on the vCPUs of a VM: k× overcommit
// is k vCPUs per CPU this process may use, each on its own pinned OS
// thread, and b.N is shared among them. A benchmark of a lock at 1x and 4x:
//
//	func BenchmarkCounter(b *testing.B) {
//		for _, oc := range []float64{1, 4} {
//			b.Run(fmt.Sprintf("oc=%gx", oc), func(b *testing.B) {
//				var mu qspin.Lock
//				n := 0
//				pvtest.RunParallel(b, oc, func(pb *pvtest.PB) {
//					for pb.Next() {
//						pb.Lock(&mu) // mu.Lock(), timing one acquisition in 16
//						n++
//						mu.Unlock()
//					}
//				})
//			})
//		}
//	}
//
// Beside ns/op it reports halts/op and kicks/op (the vCPUs' kick.Waiter
// counters: halts that went to sleep, kicks that delivered a token), steal%
// (the share of the vCPUs' time they were runnable but waiting for a CPU,
// from each thread's run_delay, see pvlock.VCPU.Steal) and, if the body
// locks with PB.Lock, p99-ns, the 99th percentile of the sampled lock
// acquisitions in nanoseconds. They are ordinary benchmark lines, so -count,
// -benchtime and benchstat work as usual.
//
// Run is the same for tests: it runs a pvlock.Workload on overcommitted
// vCPUs and fails the test if the run fails. Inside a workload or a
// benchmark body, t.Fatal, t.FailNow and t.Skip (and b's) may be called
// on the vCPU: they end the vCPU's goroutine by runtime.Goexit, which
// pvlock counts as a failed vCPU, so the others are cancelled and the test
// fails (or is skipped) once they have returned. A panic fails the test
// with the panic's stack (pvlock.PanicError). The other vCPUs must notice
// the cancellation: a workload returns when its ctx is done, a benchmark
// body when pb.Next reports false; a vCPU that exits holding a lock leaves
// it held, and vCPUs waiting for that lock never return.
//
// # GOMAXPROCS and the benchmark name
//
// The -N suffix go test gives a benchmark's name (BenchmarkCounter/oc=4x-2)
// is GOMAXPROCS when the benchmark starts, as set by -cpu; it says nothing
// of the vCPUs. While the vCPUs run, pvlock raises GOMAXPROCS to at least
// the number of running vCPUs plus two, so that Go's scheduler does not
// time-slice them behind Linux's back, and puts the old value back when the
// run ends: a body that reads runtime.GOMAXPROCS sees the raised value.
// The number of vCPUs is the factor times the number of CPUs the process
// may use (its affinity mask, as taskset sets it), whatever -cpu says; to
// vary the overcommit, run sub-benchmarks with different factors.
package pvtest

import (
	"errors"
	"testing"

	"github.com/pvlock/pvlock/pvlock"
)

// Run runs fn on a VM of factor vCPUs per CPU this process may use
// (pvlock.Overcommit on every allowed CPU) and returns the VM once every
// vCPU has returned, so that the test can read their counters. The
// workload's ctx is t.Context(), cancelled early if a vCPU fails. If the
// run fails, Run fails the test and does not return: an error returned by
// fn or a panic (with its stack) is reported with t.Fatal, and a vCPU that
// called t.Fatal, t.FailNow or t.Skip ends the test the same way.
func Run(t testing.TB, factor float64, fn pvlock.Workload) *pvlock.VM {
	t.Helper()
	cfg, err := pvlock.Overcommit(factor, nil)
	if err != nil {
		t.Fatal(err)
	}
	return RunConfig(t, cfg, fn)
}

// RunConfig is Run on a VM of cfg.
func RunConfig(t testing.TB, cfg pvlock.Config, fn pvlock.Workload) *pvlock.VM {
	t.Helper()
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		t.Fatal(err)
	}
	finish(t, vm.Run(t.Context(), fn))
	return vm
}

// finish ends the test on the goroutine running it if a run failed. A
// vCPU that left by runtime.Goexit was most likely in t.Fatal (the test
// has failed, and says why) or t.Skip (it is skipped): the test ends the
// same way. Any other error is reported with t.Fatal.
func finish(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, pvlock.ErrGoexit) {
		switch {
		case t.Failed():
			t.FailNow()
		case t.Skipped():
			t.SkipNow()
		}
	}
	t.Fatal(err)
}
