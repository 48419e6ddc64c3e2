package qspin

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/pvlock"
)

// TestFastPathDoesNotAllocate checks the uncontended Lock, TryLock and
// Unlock of every variant, with statistics on.
func TestFastPathDoesNotAllocate(t *testing.T) {
	for _, v := range variants() {
		l := New(v.opts...)
		if n := testing.AllocsPerRun(1000, func() {
			l.Lock()
			l.Unlock()
			if l.TryLock() {
				l.Unlock()
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per uncontended Lock/Unlock/TryLock", v.name, n)
		}
	}
}

func BenchmarkUncontended(b *testing.B) {
	for _, v := range variants() {
		b.Run(v.name, func(b *testing.B) {
			l := New(v.opts...)
			b.ReportAllocs()
			for b.Loop() {
				l.Lock()
				l.Unlock()
			}
		})
	}
	b.Run("sync.Mutex", locktest.UncontendedSyncMutex)
}

// BenchmarkGoroutines contends from GOMAXPROCS goroutines.
func BenchmarkGoroutines(b *testing.B) {
	for _, v := range variants() {
		b.Run(v.name, func(b *testing.B) {
			l := New(v.opts...)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Lock()
					l.Unlock()
				}
			})
		})
	}
}

// BenchmarkOvercommit runs b.N acquisitions spread over k vCPUs per host
// CPU, with the default spin threshold. ns/op is wall time per
// acquisition of the whole VM.
func BenchmarkOvercommit(b *testing.B) {
	for _, k := range []float64{1, 2, 4} {
		for _, v := range []variant{
			{"pv", ModePV, nil},
			{"pv-nosteal", ModePVNoSteal, []Option{NoStealing()}},
			{"native", ModeNative, []Option{Native()}},
			{"tas", ModeTAS, []Option{TAS()}},
		} {
			b.Run(fmt.Sprintf("%gx/%s", k, v.name), func(b *testing.B) {
				vm := locktest.Overcommitted(b, k)
				l := New(v.opts...)
				var left atomic.Int64
				left.Store(int64(b.N))
				shared := 0
				b.ReportAllocs()
				b.ResetTimer()
				err := vm.Run(context.Background(), func(ctx context.Context, _ *pvlock.VCPU) error {
					for left.Add(-1) >= 0 {
						l.Lock()
						shared++
						l.Unlock()
					}
					return nil
				})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if shared != b.N {
					b.Fatalf("%d acquisitions, want %d", shared, b.N)
				}
			})
		}
	}
}
