//go:build linux

package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
	"golang.org/x/sys/unix"
)

// BenchmarkPinnedThreads runs the locks on threads that a program pinned
// itself, not on pvlock vCPUs: 4 goroutines per allowed CPU, each locked to
// its OS thread and pinned to one CPU with sched_setaffinity, incrementing a
// counter under the lock and working outside it (Go's work shape: 100
// multiply-divide steps). pvlock knows nothing of these threads, so its
// waiters park as any goroutine's do; GOMAXPROCS is the -cpu value.
//
//	go test -run '^$' -bench PinnedThreads -cpu 2,8 -count 5 ./bench
func BenchmarkPinnedThreads(b *testing.B) {
	cpus := locktest.HostCPUs(b)
	for _, c := range []struct {
		name string
		new  func() sync.Locker
	}{
		{"sync.Mutex", func() sync.Locker { return new(sync.Mutex) }},
		{"pv-qspin", func() sync.Locker { return qspin.New() }},
		{"pv-qspin-unrestricted", func() sync.Locker { return qspin.New(qspin.NoRestriction()) }},
		{"pv-ticket", func() sync.Locker { return ticket.New() }},
		{"pv-ticket-unrestricted", func() sync.Locker { return ticket.New(ticket.NoRestriction()) }},
	} {
		b.Run("lock="+c.name, func(b *testing.B) {
			runPinned(b, c.new(), cpus, 4)
		})
	}
}

// runPinned runs b.N lock acquisitions in all on perCPU pinned threads per
// CPU and checks the counter the lock guards.
func runPinned(b *testing.B, mu sync.Locker, cpus []int, perCPU int) {
	var (
		next    atomic.Int64 // acquisitions handed out
		counter int64        // guarded by mu
		ready   sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
		pinErr  atomic.Value
	)
	n := int64(b.N)
	for i := range perCPU * len(cpus) {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			// Never unlocked: the goroutine exits locked, and Go retires
			// the pinned thread rather than reuse it.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(cpus[i%len(cpus)])
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				pinErr.Store(err)
			}
			ready.Done()
			<-start
			foo := 0
			for next.Add(1) <= n {
				mu.Lock()
				counter++
				mu.Unlock()
				foo = goMutexWork(foo, true)
			}
			if foo != 0 {
				b.Log(foo) // never: the work keeps foo at 0
			}
		}()
	}
	ready.Wait()
	if err, _ := pinErr.Load().(error); err != nil {
		close(start)
		done.Wait()
		b.Fatalf("sched_setaffinity: %v", err)
	}
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	if counter != n {
		b.Fatalf("counter %d after %d acquisitions: mutual exclusion broken", counter, n)
	}
}
