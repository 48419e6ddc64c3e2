package metrics

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// BenchmarkStatsOverhead measures a 1x lockloop (one vCPU per host CPU on a
// PV ticket lock with the default spin threshold, a short critical section
// and some private work) with statistics on and off side by side in one
// run: the vCPUs loop without pause while the benchmark switches
// pvlock.Policy.Stats every couple of milliseconds, in the order on, off, off,
// on, on, off, ... so that machine noise and drift hit both settings alike,
// and counts the acquisitions made in each phase. b.N is the number of
// acquisitions over both settings. It reports the time per acquisition of
// each setting and the extra time statistics cost, in percent, both over
// the whole run and as the median over pairs of adjacent phases.
//
// With local=500 the lock is nearly always held, so any cost inside the
// critical section is paid in full; local=2000 leaves it idle part of the
// time.
func BenchmarkStatsOverhead(b *testing.B) {
	for _, bc := range []struct{ cs, local int }{{50, 500}, {50, 2000}} {
		b.Run(fmt.Sprintf("cs=%d/local=%d", bc.cs, bc.local), func(b *testing.B) {
			statsOverhead(b, bc.cs, bc.local)
		})
	}
}

func statsOverhead(b *testing.B, cs, local int) {
	const phase = 2 * time.Millisecond
	vm := locktest.Overcommitted(b, 1)
	defer locktest.SetPolicy(func(*pvlock.Policy) {})()
	lock := ticket.New()
	counts := make([]struct {
		n atomic.Int64
		_ [120]byte
	}, len(vm.VCPUs()))
	total := func() int64 {
		var t int64
		for i := range counts {
			t += counts[i].n.Load()
		}
		return t
	}
	var stop atomic.Bool
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		done <- vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
			c := &counts[v.Index()].n
			private := uint64(v.Index())
			var shared uint64
			for !stop.Load() {
				lock.Lock()
				shared = work(shared, cs)
				lock.Unlock()
				private = work(private, local)
				c.Store(c.Load() + 1) // single writer: no read-modify-write needed
			}
			sink.Add(private + shared)
			return nil
		})
	}()
	var (
		ops    [2]int64 // [off, on]
		took   [2]time.Duration
		perAcq [2]float64
		ratios []float64
	)
	for k := 0; k < 8 || ops[0]+ops[1] < int64(b.N); k++ {
		on := (k+1)/2%2 == 0
		locktest.Statistics(on)
		c0, t0 := total(), time.Now()
		time.Sleep(phase)
		n, d := total()-c0, time.Since(t0)
		i := 0
		if on {
			i = 1
		}
		ops[i] += n
		took[i] += d
		if n > 0 {
			perAcq[i] = float64(d.Nanoseconds()) / float64(n)
		}
		if k%2 == 1 && perAcq[0] > 0 && perAcq[1] > 0 {
			ratios = append(ratios, perAcq[1]/perAcq[0])
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if len(ratios) == 0 || ops[0] == 0 || ops[1] == 0 {
		b.Fatalf("no complete pair of phases (%d acquisitions off, %d on)", ops[0], ops[1])
	}
	slices.Sort(ratios)
	off := float64(took[0].Nanoseconds()) / float64(ops[0])
	on := float64(took[1].Nanoseconds()) / float64(ops[1])
	b.ReportMetric(on, "on-ns/acq")
	b.ReportMetric(off, "off-ns/acq")
	b.ReportMetric(100*(on/off-1), "overhead-%")
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "median-overhead-%")
	b.ReportMetric(float64(len(ratios)), "pairs")
}

// BenchmarkCollect measures one collection of every lockstat.Stats and the
// vCPUs of a stopped VM with one vCPU per host CPU (a running vCPU adds a
// read of its schedstat file).
func BenchmarkCollect(b *testing.B) {
	vm := locktest.Overcommitted(b, 1)
	c := NewCollector(Options{})
	if err := c.AddVM(vm); err != nil {
		b.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 1024)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
	b.ReportMetric(float64(runtime.NumCPU()), "host-cpus")
}
