package qspin

import (
	"sync"
	"testing"
)

// The benchmarks of Go's src/sync/rwmutex_test.go, each run on
// sync.RWMutex and on the PV and native RWLock side by side
// (lock=sync.RWMutex, lock=pv-rwlock, lock=native-rwlock). The bodies are
// written out per type, not behind an interface, so that every lock's
// fast paths inline into the loop as they do in a caller's code.

// rwBenchLocks are the RWLock variants of the benchmarks.
var rwBenchLocks = []struct {
	name string
	opts []Option
}{
	{"lock=pv-rwlock", nil},
	{"lock=native-rwlock", []Option{Native()}},
}

// paddedRW is an RWLock with a line's worth of padding on either side.
type paddedRW struct {
	_ [64]byte
	RWLock
	_ [64]byte
}

func BenchmarkRWMutexUncontended(b *testing.B) {
	b.Run("lock=sync.RWMutex", func(b *testing.B) {
		type padded struct {
			sync.RWMutex
			pad [32]uint32
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var rwm padded
			for pb.Next() {
				rwm.RLock()
				rwm.RLock()
				rwm.RUnlock()
				rwm.RUnlock()
				rwm.Lock()
				rwm.Unlock()
			}
		})
	})
	for _, lk := range rwBenchLocks {
		b.Run(lk.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// One lock per goroutine, each on lines of its own, as
				// the padding above keeps sync.RWMutex's: an RWLock is 80
				// bytes, and two allocated one after the other share a
				// line.
				p := new(paddedRW)
				p.init(lk.opts)
				rwm := &p.RWLock
				for pb.Next() {
					rwm.RLock()
					rwm.RLock()
					rwm.RUnlock()
					rwm.RUnlock()
					rwm.Lock()
					rwm.Unlock()
				}
			})
		})
	}
}

// benchmarkRWMutex is Go's benchmarkRWMutex for both lock types: one
// operation in writeRatio is a write, the others reads doing localWork.
func benchmarkRWMutex(b *testing.B, localWork, writeRatio int) {
	b.Run("lock=sync.RWMutex", func(b *testing.B) {
		b.ReportAllocs()
		var rwm sync.RWMutex
		b.RunParallel(func(pb *testing.PB) {
			foo := 0
			for pb.Next() {
				foo++
				if foo%writeRatio == 0 {
					rwm.Lock()
					rwm.Unlock()
				} else {
					rwm.RLock()
					for i := 0; i != localWork; i += 1 {
						foo *= 2
						foo /= 2
					}
					rwm.RUnlock()
				}
			}
			_ = foo
		})
	})
	for _, lk := range rwBenchLocks {
		b.Run(lk.name, func(b *testing.B) {
			b.ReportAllocs()
			rwm := NewRW(lk.opts...)
			b.RunParallel(func(pb *testing.PB) {
				foo := 0
				for pb.Next() {
					foo++
					if foo%writeRatio == 0 {
						rwm.Lock()
						rwm.Unlock()
					} else {
						rwm.RLock()
						for i := 0; i != localWork; i += 1 {
							foo *= 2
							foo /= 2
						}
						rwm.RUnlock()
					}
				}
				_ = foo
			})
		})
	}
}

func BenchmarkRWMutexWrite100(b *testing.B)     { benchmarkRWMutex(b, 0, 100) }
func BenchmarkRWMutexWrite10(b *testing.B)      { benchmarkRWMutex(b, 0, 10) }
func BenchmarkRWMutexWorkWrite100(b *testing.B) { benchmarkRWMutex(b, 100, 100) }
func BenchmarkRWMutexWorkWrite10(b *testing.B)  { benchmarkRWMutex(b, 100, 10) }

// TestRWFastPathsDoNotAllocate checks the uncontended RLock, RUnlock,
// Lock, Unlock, TryLock, TryRLock and RLocker of every variant, with
// statistics on, across more than one batch of counted acquisitions.
func TestRWFastPathsDoNotAllocate(t *testing.T) {
	for _, v := range variants() {
		l := NewRW(v.opts...)
		rl := l.RLocker()
		if n := testing.AllocsPerRun(3000, func() {
			l.RLock()
			l.RUnlock()
			l.Lock()
			l.Unlock()
			if l.TryLock() {
				l.Unlock()
			}
			if l.TryRLock() {
				l.RUnlock()
			}
			rl.Lock()
			rl.Unlock()
		}); n != 0 {
			t.Errorf("%s: %v allocations per uncontended round", v.name, n)
		}
	}
}
