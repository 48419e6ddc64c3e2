package pvtest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/pvtest"
	"github.com/pvlock/pvlock/ticket"
)

// A benchmark of a PV ticket lock at 2x overcommit: twice as many vCPUs as
// CPUs share b.N. In a _test.go file the function passed to
// testing.Benchmark is the benchmark itself, func BenchmarkTicket(b
// *testing.B), and go test -bench prints its result line:
//
//	BenchmarkTicket-2  <N>  <t> ns/op  <h> halts/op  <k> kicks/op  <p> p99-ns  <s> steal%
func ExampleRunParallel() {
	r := testing.Benchmark(func(b *testing.B) {
		var mu ticket.Lock
		n := 0
		pvtest.RunParallel(b, 2, func(pb *pvtest.PB) {
			for pb.Next() {
				pb.Lock(&mu) // mu.Lock(), and one call in 16 is timed for p99-ns
				n++
				mu.Unlock()
			}
		})
		if n != b.N {
			b.Fatalf("%d increments in %d iterations", n, b.N)
		}
	})
	fmt.Println(r.N > 0, slices.Sorted(maps.Keys(r.Extra)))
	// Output: true [halts/op kicks/op p99-ns steal%]
}

// A test that runs its workload on 2x overcommit. In a _test.go file it is
// func TestTicket(t *testing.T), and t is passed to Run; here
// testing.Benchmark provides a testing.TB so that the example runs on its
// own. A t.Fatal on a vCPU would end the run and fail the test.
func ExampleRun() {
	var vcpus atomic.Int64
	testing.Benchmark(func(b *testing.B) {
		var (
			mu    ticket.Lock
			total int // guarded by mu
		)
		t := testing.TB(b)
		vm := pvtest.Run(t, 2, func(ctx context.Context, v *pvlock.VCPU) error {
			for range 1000 {
				mu.Lock()
				total++
				mu.Unlock()
			}
			return nil
		})
		if total != 1000*len(vm.VCPUs()) {
			t.Fatalf("total %d after %d vCPUs added 1000 each", total, len(vm.VCPUs()))
		}
		vcpus.Store(int64(len(vm.VCPUs())))
	})
	cpus, _ := pvlock.HostCPUs()
	fmt.Println(vcpus.Load() == int64(2*len(cpus)))
	// Output: true
}
