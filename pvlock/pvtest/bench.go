package pvtest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/latency"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
	"golang.org/x/sys/cpu"
)

// SampleEvery is the sampling period of PB.Lock: one acquisition in
// SampleEvery is timed.
const SampleEvery = 16

// PB is a vCPU's share of a RunParallel benchmark, like testing.PB: the
// body calls Next until it reports false. Each vCPU has its own PB, which
// only that vCPU may use.
type PB struct {
	_     cpu.CacheLinePad
	v     *pvlock.VCPU
	ctx   context.Context
	left  *atomic.Int64 // iterations of b.N nobody has claimed yet
	grain int64         // iterations claimed at a time
	cache int64         // iterations claimed and not yet handed out
	done  bool          // Next has reported false
	tick  uint32        // Lock's sampling counter
	hist  latency.Hist  // sampled acquisitions
	_     cpu.CacheLinePad
}

// Next reports whether there is another iteration to run. The vCPUs claim
// the iterations of b.N in batches, so most calls touch nothing shared.
// Next reports false once b.N iterations have been handed out, or, at its
// next claim of a batch, when the run ends early because a vCPU failed.
func (pb *PB) Next() bool {
	if pb.cache > 0 {
		pb.cache--
		return true
	}
	return pb.claim()
}

// claim takes the next batch of iterations.
func (pb *PB) claim() bool {
	if pb.done {
		return false
	}
	if pb.ctx.Err() == nil {
		if n := pb.left.Add(-pb.grain) + pb.grain; n > 0 { // unclaimed before ours
			pb.cache = min(n, pb.grain) - 1
			return true
		}
	}
	pb.done = true
	return false
}

// VCPU returns the vCPU the body runs on, for what a vCPU offers:
// VCPU.Poll, VCPU.CondRelock, VCPU.Idle, its index.
func (pb *PB) VCPU() *pvlock.VCPU { return pb.v }

// Context returns the run's context: it is done when a vCPU has failed and
// the run is ending early (Next reports false from then on).
func (pb *PB) Context() context.Context { return pb.ctx }

// Lock locks l, and for one call in SampleEvery measures how long Lock
// took: the samples of every vCPU make the benchmark's p99-ns. Use it in
// place of l.Lock() where the acquisition's latency is of interest. A
// sampled call reads the clock twice, which took 80-110 ns on a 2-CPU VM,
// 5-7 ns per call on average. Unlock l as usual. Lock must be called on
// pb's own vCPU.
func (pb *PB) Lock(l sync.Locker) {
	if pb.tick++; pb.tick%SampleEvery != 0 {
		l.Lock()
		return
	}
	start := time.Now()
	l.Lock()
	pb.hist.Record(uint64(time.Since(start)))
}

// gateTimeout bounds a halt at the start gate, so that a vCPU waiting
// there notices a run that ends before every vCPU has arrived.
const gateTimeout = 10 * time.Millisecond

// maxGrain bounds the iterations a vCPU claims at once: with a body of
// 10 ns or more, a claim touches the shared counter at most every 10 µs.
const maxGrain = 1000

// RunParallel runs body on a VM of factor vCPUs per CPU this process may
// use (pvlock.Overcommit on every allowed CPU), like testing.B.RunParallel:
// each vCPU calls body once with its own PB, and the bodies share b.N
// iterations through PB.Next. It reports ns/op, halts/op, kicks/op, steal%
// and, if the body uses PB.Lock, p99-ns (see the package doc).
//
// The timer runs from the moment every vCPU is pinned and ready to the
// moment the last body returns, and is stopped when RunParallel returns:
// starting and stopping the vCPU threads is not timed, and what the
// benchmark timed before the call is kept. Waking the vCPUs at the start
// and waiting for the last of them to finish are timed; with b.N = 1 that
// took 30-130 µs at 1x and 200-340 µs at 4x on a loaded 2-CPU VM, a
// share of ns/op that only very short runs notice. A body may call b.Fatal,
// b.FailNow or b.Skip on its vCPU; a panic, or a body that returns before
// Next reports false, fails the benchmark.
func RunParallel(b *testing.B, factor float64, body func(pb *PB)) {
	b.Helper()
	cfg, err := pvlock.Overcommit(factor, nil)
	if err != nil {
		b.Fatal(err)
	}
	RunParallelConfig(b, cfg, body)
}

// RunParallelConfig is RunParallel on a VM of cfg.
func RunParallelConfig(b *testing.B, cfg pvlock.Config, body func(pb *PB)) {
	b.Helper()
	if b.N == 0 {
		return // nothing to do, as in testing.B.RunParallel
	}
	b.StopTimer()
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		b.Fatal(err)
	}
	vcpus := vm.VCPUs()
	n := len(vcpus)
	var left atomic.Int64
	left.Store(int64(b.N))
	grain := min(max(int64(b.N)/(int64(n)*100), 1), maxGrain)

	var (
		pbs       = make([]*PB, n)
		steal     = make([]time.Duration, n)
		gateHalts = make([]uint64, n) // halts of each vCPU at the gate
		gateKicks uint64              // kicks that opened the gate
		arrived   atomic.Int32
		active    atomic.Int32 // vCPUs past the gate, still in the body
		t0, t1    time.Time    // the gate opened, the last body returned
	)
	before := counters(vcpus)
	err = vm.Run(b.Context(), func(ctx context.Context, v *pvlock.VCPU) error {
		pb := &PB{v: v, ctx: ctx, left: &left, grain: grain, tick: rand.Uint32N(SampleEvery)}
		pbs[v.Index()] = pb
		s0 := v.Steal()
		// The gate: every vCPU but the last halts on its own futex until
		// the last one to arrive has started the clock and kicks it. The
		// halted vCPUs hold no P, so that starting the clock (which stops
		// the world) and waking them involve no Go scheduler hand-offs;
		// the gate's halts and kicks are left out of the metrics.
		w := v.Waiter()
		w.Arm()
		if arrived.Add(1) == int32(n) {
			active.Store(int32(n))
			b.StartTimer()
			t0 = time.Now()
			for _, o := range vcpus {
				if o != v && o.Waiter().Kick() {
					gateKicks++
				}
			}
		} else {
			h0 := w.Counters().Halts
			for w.Sleep(gateTimeout) != kick.Kicked {
				if ctx.Err() != nil {
					return nil
				}
			}
			gateHalts[v.Index()] = w.Counters().Halts - h0
		}
		defer func() { // also after b.Fatal's Goexit
			if active.Add(-1) == 0 {
				t1 = time.Now()
				b.StopTimer()
			}
			steal[v.Index()] = max(v.Steal()-s0, 0)
		}()
		body(pb)
		return nil
	})
	b.StopTimer()
	finish(b, err)
	for i, pb := range pbs {
		if (pb == nil || !pb.done) && !b.Failed() {
			b.Fatalf("pvtest: the body of vCPU %d returned before pb.Next() reported false", i)
		}
	}
	after := counters(vcpus)
	after.kicks -= gateKicks
	for _, h := range gateHalts {
		after.halts -= h
	}
	ops := float64(b.N)
	b.ReportMetric(float64(after.halts-before.halts)/ops, "halts/op")
	b.ReportMetric(float64(after.kicks-before.kicks)/ops, "kicks/op")
	if elapsed := t1.Sub(t0); elapsed > 0 {
		var stolen time.Duration
		for _, s := range steal {
			stolen += s
		}
		b.ReportMetric(min(100*float64(stolen)/(float64(n)*float64(elapsed)), 100), "steal%")
	}
	var lat latency.Hist
	for _, pb := range pbs {
		if pb != nil {
			lat.Merge(&pb.hist)
		}
	}
	if lat.Count() > 0 {
		b.ReportMetric(float64(lat.Quantile(0.99)), "p99-ns")
	}
}

// vcpuCounters are the halt and kick counts of a VM's vCPUs, summed.
type vcpuCounters struct{ halts, kicks uint64 }

// counters sums the kick.Waiter counters of vcpus.
func counters(vcpus []*pvlock.VCPU) vcpuCounters {
	var c vcpuCounters
	for _, v := range vcpus {
		k := v.Waiter().Counters()
		c.halts += k.Halts
		c.kicks += k.KicksReceived
	}
	return c
}
