package bench

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// BenchmarkGoMutex is Go's own set of contended sync.Mutex benchmarks
// (src/sync/mutex_test.go: BenchmarkMutex, BenchmarkMutexSlack,
// BenchmarkMutexWork and BenchmarkMutexWorkSlack) with the lock swapped
// in. Unlike BenchmarkGoShapes, which goes through sync.Locker, each lock
// is called as its concrete type, so that its fast paths are inlined into
// the loop exactly as sync.Mutex's are in Go's benchmark:
//
//	go test -run '^$' -bench GoMutex -cpu 2,8 -count 5 ./bench | tee gomutex.txt
//	benchstat -row /shape -col /lock gomutex.txt
//
// Sub-benchmarks are named shape=<shape>/lock=<lock>; the PV locks run
// with concurrency restriction on and off (lock=pv-qspin and
// lock=pv-qspin-unrestricted, ...), side by side with sync.Mutex, which
// runs first and once more last (lock=sync.Mutex-again) to show the A/A
// spread, and with two floors that take no lock (lock=floor-atomic and
// lock=floor-none, below). The PV locks also report their restriction's
// events per 1000 operations (reportGateEvents).
func BenchmarkGoMutex(b *testing.B) {
	shapes := []struct {
		name        string
		slack, work bool
	}{
		{"mutex", false, false},
		{"slack", true, false},
		{"work", false, true},
		{"workslack", true, true},
	}
	for _, s := range shapes {
		b.Run("shape="+s.name, func(b *testing.B) {
			syncMutex := func(b *testing.B) {
				var mu sync.Mutex
				goMutexParallel(b, s.slack, func(pb *testing.PB) int {
					foo := 0
					for pb.Next() {
						mu.Lock()
						mu.Unlock()
						foo = goMutexWork(foo, s.work)
					}
					return foo
				})
			}
			b.Run("lock=sync.Mutex", syncMutex)
			// Two floors, no lock at all. floor-atomic adds 1 to one shared
			// word per operation: one read-modify-write of a shared line,
			// the least an acquisition costs once goroutines on different
			// CPUs take turns, since each must move the lock's line to its
			// own CPU. floor-none does the shape's work alone, with nothing
			// shared. In the work shapes a lock cannot go below
			// floor-atomic but by keeping all but one goroutine asleep,
			// which runs the work on one CPU (the shape's ns/op at -cpu 1);
			// floor-atomic's spread over a run is the host's cost of moving
			// a line between the CPUs.
			b.Run("lock=floor-atomic", func(b *testing.B) {
				var shared atomic.Int64
				goMutexParallel(b, s.slack, func(pb *testing.PB) int {
					foo := 0
					for pb.Next() {
						shared.Add(1)
						foo = goMutexWork(foo, s.work)
					}
					return foo
				})
			})
			b.Run("lock=floor-none", func(b *testing.B) {
				goMutexParallel(b, s.slack, func(pb *testing.PB) int {
					foo := 0
					for pb.Next() {
						foo = goMutexWork(foo, s.work)
					}
					return foo
				})
			})
			for _, q := range []struct {
				name string
				opts []qspin.Option
			}{
				{"pv-qspin", nil},
				{"pv-qspin-unrestricted", []qspin.Option{qspin.NoRestriction()}},
				{"pv-qspin-nosteal", []qspin.Option{qspin.NoStealing()}},
				{"pv-qspin-nosteal-unrestricted", []qspin.Option{qspin.NoStealing(), qspin.NoRestriction()}},
			} {
				b.Run("lock="+q.name, func(b *testing.B) {
					mu := qspin.New(q.opts...)
					defer reportGateEvents(b, qspin.Stats(qspin.ModePV), qspin.PVLockStealing)()
					goMutexParallel(b, s.slack, func(pb *testing.PB) int {
						foo := 0
						for pb.Next() {
							mu.Lock()
							mu.Unlock()
							foo = goMutexWork(foo, s.work)
						}
						return foo
					})
				})
			}
			for _, t := range []struct {
				name string
				opts []ticket.Option
			}{
				{"pv-ticket", nil},
				{"pv-ticket-unrestricted", []ticket.Option{ticket.NoRestriction()}},
			} {
				b.Run("lock="+t.name, func(b *testing.B) {
					mu := ticket.New(t.opts...)
					defer reportGateEvents(b, ticket.Stats(ticket.ModePV))()
					goMutexParallel(b, s.slack, func(pb *testing.PB) int {
						foo := 0
						for pb.Next() {
							mu.Lock()
							mu.Unlock()
							foo = goMutexWork(foo, s.work)
						}
						return foo
					})
				})
			}
			// sync.Mutex once more, last: its ratio to the first run is
			// the A/A spread, what a ratio to sync.Mutex of this run can
			// move with no change of lock at all.
			b.Run("lock=sync.Mutex-again", syncMutex)
		})
	}
}

// reportGateEvents starts counting the events of st, the statistics of
// the lock the benchmark runs, and returns the function that reports them
// per 1000 operations: the waits outside the lock (passive_waits), those
// that slept (passive_halts), and extra, such as a stealing lock's
// acquisitions by its spinner (pv_lock_stealing). They say where a
// contended lock's time goes: a waiter that is let in again before it
// sleeps spins, and takes the lock's line from its holder.
func reportGateEvents(b *testing.B, st *lockstat.Stats, extra ...string) func() {
	before := st.Snapshot()
	return func() {
		d := st.Snapshot().Sub(before)
		for _, ev := range append([]string{lockcore.PassiveWaits, lockcore.PassiveHalts}, extra...) {
			b.ReportMetric(float64(d.Get(ev))*1000/float64(b.N), ev+"/1k-ops")
		}
	}
}

// goMutexParallel runs body on b.RunParallel's goroutines, ten per P for a
// slack shape, as Go's benchmarks do, and keeps the bodies' results alive.
func goMutexParallel(b *testing.B, slack bool, body func(pb *testing.PB) int) {
	if slack {
		b.SetParallelism(10)
	}
	var mu sync.Mutex
	total := 0
	b.RunParallel(func(pb *testing.PB) {
		foo := body(pb)
		mu.Lock()
		total += foo
		mu.Unlock()
	})
	if total == 1 {
		b.Log(total) // never: total is a sum of zeros; it keeps the work alive
	}
}

// goMutexWork is the work shapes' local work outside the lock: 100
// multiply-divide steps on a local, as in Go's benchmarks. It is not
// inlined, so that every lock's loop runs the same machine code for it.
// Inlined, the compiler folds the work of a zero local into an empty
// counted loop, whose speed then depends on where that loop lands in each
// closure: here one that straddled a 64-byte boundary ran at half speed,
// and the work shape measured code alignment rather than locks.
//
//go:noinline
func goMutexWork(foo int, work bool) int {
	if work {
		for i := 0; i < 100; i++ {
			foo *= 2
			foo /= 2
		}
	}
	return foo
}
