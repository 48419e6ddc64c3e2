package bench

import (
	"sync"
	"testing"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
	"golang.org/x/sys/cpu"
)

// The benchmarks in this file run the locks on ordinary goroutines, not
// on vCPUs, in the shapes of the benchmarks of Go's own sync.Mutex
// (src/sync/mutex_test.go): this is how a Go user who swaps a sync.Mutex
// for a pvlock lock will judge it. Run them at several GOMAXPROCS:
//
//	go test -run '^$' -bench GoShapes -cpu 2,8 -count 5 -benchtime 100ms ./bench | tee shapes.txt
//	benchstat -row /shape -col /lock shapes.txt
//
// Sub-benchmarks are named shape=<shape>/lock=<lock>[/stats=on|off]. Every
// registered lock runs through sync.Locker; the "-direct" locks call the
// concrete type, so that its inlined fast paths count.

// goShapeLocks returns the locks of the uncontended shapes: every
// registered lock, through sync.Locker.
func goShapeLocks() []string { return locks.Names() }

// goContendedLocks returns the locks of the contended shapes: the lab's
// locks but the FIFO spinlocks (locks.Kind.FIFOSpin: native-ticket,
// native-qspin, preemptable-ticket, ple-yield). On goroutines that
// outnumber the Ps, every hand-off to a waiter that is not running waits
// for the scheduler to preempt a spinner (10 ms), so a run takes minutes
// (tight at GOMAXPROCS 2, 2026-12-01: native-ticket 2.2 µs/op,
// preemptable-ticket 4.4 µs/op, native-qspin in slack did not finish a
// 50 ms benchtime within 3 minutes; ple-yield, whose waiters sched_yield
// the whole thread, tight: 0.4-2.1 µs/op at GOMAXPROCS 2, work: 28 µs/op
// at 8).
func goContendedLocks() []locks.Kind {
	var out []locks.Kind
	for _, name := range locks.Names() {
		if k, _ := locks.Lookup(name); !k.FIFOSpin {
			out = append(out, k)
		}
	}
	return out
}

// padded is a lock alone on its cache lines, as Go's PaddedMutex.
type padded[L any] struct {
	_ cpu.CacheLinePad
	l L
	_ cpu.CacheLinePad
}

// bothStats runs f as the sub-benchmarks stats=on and stats=off, with
// pvlock statistics switched accordingly.
func bothStats(b *testing.B, f func(b *testing.B)) {
	for _, on := range []bool{true, false} {
		name := "stats=on"
		if !on {
			name = "stats=off"
		}
		b.Run(name, func(b *testing.B) {
			defer locktest.Statistics(on)()
			b.ReportAllocs()
			f(b)
		})
	}
}

// BenchmarkGoShapes runs Go's sync.Mutex benchmark shapes on every lock:
//
//   - single: one goroutine, one lock (next to two bare atomic adds);
//   - uncontended: RunParallel, one padded lock per goroutine
//     (BenchmarkMutexUncontended);
//   - tight: every goroutine locks one shared lock in a loop
//     (BenchmarkMutex);
//   - work: the same with 100 divisions of local work after each Unlock
//     (BenchmarkMutexWork);
//   - slack, workslack: the two above with 10 goroutines per P
//     (BenchmarkMutexSlack, BenchmarkMutexWorkSlack);
//   - spin: one goroutine per P, each touching its own 128 KiB after each
//     Unlock, so that a waiter that gives up its P pays in cache misses
//     (BenchmarkMutexSpin);
//   - nospin: 4 goroutines per P; 3 iterations in 4 do local work and hand
//     the P over through a channel, 1 takes the lock: spinning does not
//     pay (BenchmarkMutexNoSpin; the hand-over allocates a goroutine).
func BenchmarkGoShapes(b *testing.B) {
	b.Run("shape=single", benchSingle)
	b.Run("shape=uncontended", benchUncontended)
	for _, s := range []struct {
		name        string
		parallelism int
		work        bool
	}{
		{"tight", 1, false},
		{"work", 1, true},
		{"slack", 10, false},
		{"workslack", 10, true},
	} {
		b.Run("shape="+s.name, func(b *testing.B) {
			for _, lk := range goContendedLocks() {
				b.Run("lock="+lk.Name, func(b *testing.B) {
					benchShared(b, lk.New(), s.parallelism, s.work)
				})
			}
		})
	}
	b.Run("shape=spin", func(b *testing.B) {
		for _, lk := range goContendedLocks() {
			b.Run("lock="+lk.Name, func(b *testing.B) { benchSpin(b, lk.New()) })
		}
	})
	b.Run("shape=nospin", func(b *testing.B) {
		for _, lk := range goContendedLocks() {
			b.Run("lock="+lk.Name, func(b *testing.B) { benchNoSpin(b, lk.New()) })
		}
	})
}

// loop calls op b.N times, and parallel calls op for every iteration of
// pb. Both are inlined, and so is op where it is a function literal: a
// loop over a concrete lock type keeps the lock's inlined fast paths,
// with no call in between (the "-direct" locks), while a sync.Locker
// makes the two interface calls the lab's locks are measured with.
func loop(b *testing.B, op func()) {
	for i := 0; i < b.N; i++ {
		op()
	}
}

func parallel(pb *testing.PB, op func()) {
	for pb.Next() {
		op()
	}
}

// direct are the "-direct" locks: sync.Mutex and the PV locks called as
// their concrete types, alone (single) and one padded lock per goroutine
// (parallel).
var direct = []struct {
	name     string
	single   func(b *testing.B)
	parallel func(pb *testing.PB)
}{
	{"sync.Mutex-direct", func(b *testing.B) { var mu sync.Mutex; loop(b, func() { mu.Lock(); mu.Unlock() }) },
		func(pb *testing.PB) { var mu padded[sync.Mutex]; parallel(pb, func() { mu.l.Lock(); mu.l.Unlock() }) }},
	{"pv-ticket-direct", func(b *testing.B) { var mu ticket.Lock; loop(b, func() { mu.Lock(); mu.Unlock() }) },
		func(pb *testing.PB) { var mu padded[ticket.Lock]; parallel(pb, func() { mu.l.Lock(); mu.l.Unlock() }) }},
	{"pv-qspin-direct", func(b *testing.B) { var mu qspin.Lock; loop(b, func() { mu.Lock(); mu.Unlock() }) },
		func(pb *testing.PB) { var mu padded[qspin.Lock]; parallel(pb, func() { mu.l.Lock(); mu.l.Unlock() }) }},
}

// benchSingle: one goroutine, one lock, called directly, with statistics
// on and off (BenchmarkUncontendedLocks has every lock through
// sync.Locker).
func benchSingle(b *testing.B) {
	b.Run("lock=two-atomic-adds", benchTwoAtomicAdds)
	for _, d := range direct {
		b.Run("lock="+d.name, func(b *testing.B) { bothStats(b, d.single) })
	}
}

// benchUncontended: RunParallel, one padded lock per goroutine, with
// statistics on and off. Different locks on different CPUs must not
// share a cache line, or this shape stops scaling.
func benchUncontended(b *testing.B) {
	for _, d := range direct {
		b.Run("lock="+d.name, func(b *testing.B) {
			bothStats(b, func(b *testing.B) { b.RunParallel(d.parallel) })
		})
	}
	for _, name := range goShapeLocks() {
		lk, _ := locks.Lookup(name)
		b.Run("lock="+name, func(b *testing.B) {
			bothStats(b, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					// New allocates the lock itself, which cannot be
					// padded: take the middle one of a burst of
					// this goroutine's allocations, so that its
					// neighbours on the heap are locks nobody uses.
					var burst [9]sync.Locker
					for i := range burst {
						burst[i] = lk.New()
					}
					l := burst[len(burst)/2]
					parallel(pb, func() { l.Lock(); l.Unlock() })
				})
			})
		})
	}
}

// benchShared is Go's benchmarkMutex: every goroutine locks l in a loop,
// parallelism goroutines per P, with or without local work after Unlock.
func benchShared(b *testing.B, l sync.Locker, parallelism int, work bool) {
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		foo := 0
		for pb.Next() {
			l.Lock()
			l.Unlock()
			if work {
				for i := 0; i < 100; i++ {
					foo *= 2
					foo /= 2
				}
			}
		}
		_ = foo
	})
}

// benchSpin is Go's BenchmarkMutexSpin: one goroutine per P, each with a
// 128 KiB working set it touches after each Unlock.
func benchSpin(b *testing.B, l sync.Locker) {
	var acc0, acc1 uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var data [16 << 10]uint64
		for i := 0; pb.Next(); i++ {
			l.Lock()
			acc0 -= 100
			acc1 += 100
			l.Unlock()
			for i := 0; i < len(data); i += 4 {
				data[i]++
			}
		}
	})
	if acc0+acc1 != 0 {
		b.Fatalf("accounts out of balance: %d + %d", acc0, acc1)
	}
}

// benchNoSpin is Go's BenchmarkMutexNoSpin: 4 goroutines per P; one
// iteration in 4 takes the lock, the others do local work and let another
// goroutine run by a channel hand-over.
func benchNoSpin(b *testing.B, l sync.Locker) {
	var acc0, acc1 uint64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := make(chan bool)
		var data [4 << 10]uint64
		for i := 0; pb.Next(); i++ {
			if i%4 == 0 {
				l.Lock()
				acc0 -= 100
				acc1 += 100
				l.Unlock()
			} else {
				for i := 0; i < len(data); i += 4 {
					data[i]++
				}
				// runtime.Gosched without the global run queue.
				go func() {
					c <- true
				}()
				<-c
			}
		}
	})
	if acc0+acc1 != 0 {
		b.Fatalf("accounts out of balance: %d + %d", acc0, acc1)
	}
}
