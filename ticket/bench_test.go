package ticket

import (
	"sync/atomic"
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
)

// BenchmarkUncontended measures one Lock+Unlock pair on a lock nobody else
// touches, next to the two bare atomic adds a ticket lock's fast paths are
// made of and to sync.Mutex. The PV fast path must stay allocation-free.
func BenchmarkUncontended(b *testing.B) {
	b.Run("lock=two-atomic-adds", func(b *testing.B) {
		var w atomic.Uint64
		b.ReportAllocs()
		for b.Loop() {
			w.Add(1 << 32)
			w.Add(1)
		}
	})
	b.Run("lock=sync.Mutex", locktest.UncontendedSyncMutex)
	for _, v := range variants[:2] {
		b.Run("lock="+v.name+"-ticket", func(b *testing.B) {
			l := v.new()
			b.ReportAllocs()
			for b.Loop() {
				l.Lock()
				l.Unlock()
			}
		})
	}
	b.Run("lock=pv-ticket-nostats", func(b *testing.B) {
		defer locktest.Statistics(false)()
		l := New()
		b.ReportAllocs()
		for b.Loop() {
			l.Lock()
			l.Unlock()
		}
	})
	b.Run("lock=pv-ticket-trylock", func(b *testing.B) {
		l := New()
		b.ReportAllocs()
		for b.Loop() {
			if l.TryLock() {
				l.Unlock()
			}
		}
	})
}

// TestUncontendedAllocFree pins the allocation-free claim as a test.
func TestUncontendedAllocFree(t *testing.T) {
	for _, v := range variants {
		l := v.new()
		if n := testing.AllocsPerRun(1000, func() { l.Lock(); l.Unlock() }); n != 0 {
			t.Errorf("%s: %v allocations per Lock+Unlock", v.name, n)
		}
	}
}
