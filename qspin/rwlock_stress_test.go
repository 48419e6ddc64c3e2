package qspin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
)

// rwTable is the data of the stress tests: writers move amounts between
// its slots, so that they always sum to zero, and bump gen before and
// after (gen[0] then gen[1]); a reader that finds a sum other than zero,
// or the two generations apart, saw a writer inside. Its fields are plain
// on purpose: only the lock orders them, which the race detector checks.
type rwTable struct {
	slot [16]int64
	gen  [2]uint64
	// inside counts readers inside plus 1<<32 per writer inside, an
	// atomic check of the exclusion beside the data's.
	inside atomic.Int64
	bad    atomic.Int64 // violations seen
}

// read checks the table, as a reader.
func (d *rwTable) read() {
	if n := d.inside.Add(1); n >= 1<<32 {
		d.bad.Add(1)
	}
	g1 := d.gen[1]
	var sum int64
	for _, v := range d.slot {
		sum += v
	}
	if sum != 0 || d.gen[0] != g1 {
		d.bad.Add(1)
	}
	d.inside.Add(-1)
}

// write changes the table, as a writer; i picks the slots and amount.
func (d *rwTable) write(i int) {
	if n := d.inside.Add(1 << 32); n != 1<<32 {
		d.bad.Add(1)
	}
	d.gen[0]++
	a, b := i%len(d.slot), (i*7+3)%len(d.slot)
	d.slot[a] += int64(i)
	for k := 0; k < 4; k++ {
		relax.Pause(1) // a writer inside for a moment, readers spinning
	}
	d.slot[b] -= int64(i)
	d.gen[1]++
	d.inside.Add(-1 << 32)
}

// use takes l to change the table, as a writer (write(i)) if write is
// set, or else to read it, as a reader.
func (d *rwTable) use(l *RWLock, i int, write bool) {
	if write {
		l.Lock()
		d.write(i)
		l.Unlock()
	} else {
		l.RLock()
		d.read()
		l.RUnlock()
	}
}

// check fails t if the table's invariant was ever broken, or is now.
func (d *rwTable) check(t *testing.T, what string) {
	t.Helper()
	var sum int64
	for _, v := range d.slot {
		sum += v
	}
	if n := d.bad.Load(); n != 0 || sum != 0 || d.gen[0] != d.gen[1] || d.inside.Load() != 0 {
		t.Errorf("%s: %d violations, sum %d, generations %v, inside %#x", what, n, sum, d.gen, d.inside.Load())
	}
}

// rwStressDelta checks the statistics of a stress run: every write was
// counted once its batch was flushed, no halt of a queue head timed out
// and none lost its wake-up, and the wait lock lost none either.
func rwStressDelta(t *testing.T, l *RWLock, rw, wq lockstat.Snapshot) {
	t.Helper()
	t.Logf("reads %d writes %d slowpath r/w %d/%d halts r/w %d/%d kicks r/w %d/%d; wait lock: slowpath %d halts %d",
		rw.Get(ReadAcquisitions), rw.Get(WriteAcquisitions), rw.Get(ReadSlowpath), rw.Get(WriteSlowpath),
		rw.Get(ReadHalts), rw.Get(WriteHalts), rw.Get(ReadKicks), rw.Get(WriteKicks),
		wq.Get(LockSlowpath), wq.Get(Halts))
	for _, ev := range []string{RWHaltTimeouts, RWLostWakeups} {
		if n := rw.Get(ev); n != 0 {
			t.Errorf("%v: %s = %d", l.Mode(), ev, n)
		}
	}
	if n := wq.Get(LostWakeups); n != 0 {
		t.Errorf("%v: the wait lock lost %d wake-ups", l.Mode(), n)
	}
	if !l.PV() && rw.Get(ReadHalts)+rw.Get(WriteHalts) != 0 {
		t.Errorf("%v: queue heads halted", l.Mode())
	}
	if l.word.Load() != 0 || l.wait.word.Load() != 0 {
		t.Errorf("%v: left behind word %#x, wait lock %#x", l.Mode(), l.word.Load(), l.wait.word.Load())
	}
}

// TestRWStressGoroutines has goroutines read the table (seven times in
// eight) and change it, for every variant.
func TestRWStressGoroutines(t *testing.T) {
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	defer locktest.LongHaltTimeout()()
	forEachRW(t, func(t *testing.T, l *RWLock) {
		goroutines := []int{4, 16}
		iters := iters
		if !l.PV() {
			// Spinning heads on more goroutines than Ps wait for
			// preemption (see TestRWHammer).
			goroutines, iters = []int{2}, iters/3
		}
		for _, g := range goroutines {
			t.Run(fmt.Sprintf("%dgoroutines", g), func(t *testing.T) {
				var d rwTable
				rs, ws := RWStats(l.Mode()), Stats(l.Mode())
				rb, wb := rs.Snapshot(), ws.Snapshot()
				readsBefore := l.word.reads()
				var reads uint32
				for g := range g {
					for i := 0; i < iters; i++ {
						if (i+g)%8 != 0 {
							reads++
						}
					}
				}
				wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("RWLock %v x%d goroutines", l.Mode(), g), rwDump(l))
				testkit.Goroutines(g, func(g int) {
					for i := 0; i < iters; i++ {
						d.use(l, i, (i+g)%8 == 0)
					}
				})
				wd.Stop()
				d.check(t, l.Mode().String())
				rw := rs.Snapshot().Sub(rb)
				rwStressDelta(t, l, rw, ws.Snapshot().Sub(wb))
				// Every RLock is counted exactly once in the lock, fast or
				// slow, and the statistics, which the lock adds to a batch
				// at a time, are within a batch of it.
				if got := l.word.reads() - readsBefore; got != reads {
					t.Errorf("%v: the lock counted %d reads, want %d", l.Mode(), got, reads)
				}
				if got := int64(rw.Get(ReadAcquisitions)); pvlock.CurrentPolicy().Stats && (got <= int64(reads)-batch || got >= int64(reads)+batch) {
					t.Errorf("%v: %d read acquisitions in the statistics for %d reads", l.Mode(), got, reads)
				}
			})
		}
	})
}

// TestRWStressVCPUs runs the PV variants on pinned vCPUs at 2x and 4x the
// host's CPUs, where holders and queue heads are really preempted: the
// table's invariant holds, and queue heads halted and were kicked without
// a lost wake-up.
func TestRWStressVCPUs(t *testing.T) {
	d := 500 * time.Millisecond
	if testing.Short() {
		d = 150 * time.Millisecond
	}
	cpus := locktest.HostCPUs(t)
	defer locktest.LongHaltTimeout()()
	for _, v := range variants()[:2] {
		for _, n := range []int{2 * len(cpus), 4 * len(cpus)} {
			t.Run(fmt.Sprintf("%s/%dvcpus", v.name, n), func(t *testing.T) {
				l := NewRW(v.opts...)
				var tab rwTable
				vm := locktest.NewVM(t, pvlock.Config{VCPUs: n, Pinning: pvlock.PinEach})
				rs, ws := RWStats(l.Mode()), Stats(l.Mode())
				rb, wb := rs.Snapshot(), ws.Snapshot()
				per := make([]int64, n)
				wd := testkit.Watchdog(2*time.Minute, fmt.Sprintf("RWLock %v x%d vCPUs", l.Mode(), n), rwDump(l))
				err := locktest.RunFor(vm, d, func(ctx context.Context, vc *pvlock.VCPU) error {
					g := vc.Index()
					for i := 0; i == 0 || ctx.Err() == nil; i++ {
						tab.use(l, i, (i+g)%4 == 0)
						per[g]++
					}
					return nil
				})
				wd.Stop()
				if err != nil {
					t.Fatal(err)
				}
				tab.check(t, l.Mode().String())
				rw := rs.Snapshot().Sub(rb)
				rwStressDelta(t, l, rw, ws.Snapshot().Sub(wb))
				for g, k := range per {
					if k == 0 {
						t.Errorf("vCPU %d never took the lock", g)
					}
				}
				if rw.Get(ReadSlowpath)+rw.Get(WriteSlowpath) == 0 {
					t.Errorf("%v x%d vCPUs: nobody took the slow path", l.Mode(), n)
				}
			})
		}
	}
}

// seq orders the acquisitions of the starvation tests.
type seq struct{ n atomic.Int64 }

func (s *seq) next() int64 { return s.n.Add(1) }

// take starts a goroutine in all that takes the lock with lock, records
// its place in the order in *at and leaves with unlock.
func (s *seq) take(all *sync.WaitGroup, lock, unlock func(), at *int64) {
	all.Go(func() {
		lock()
		*at = s.next()
		unlock()
	})
}

// late starts n late arrivals in all, which take the lock as take does,
// and gives them time to try: it fails the test if anyone took the lock
// meanwhile, held saying what keeps them out. The places it returns are
// filled in once all is waited for.
func (s *seq) late(t *testing.T, all *sync.WaitGroup, n int, lock, unlock func(), held string) []int64 {
	t.Helper()
	at := make([]int64, n)
	for i := range n {
		s.take(all, lock, unlock, &at[i])
	}
	time.Sleep(10 * time.Millisecond)
	if n := s.n.Load(); n != 0 {
		t.Fatalf("%d acquisitions while %s", n, held)
	}
	return at
}

// wantAfter fails the test for every late arrival (who) that entered
// before first (the waiter named firstWho), which the bound lets in first.
func wantAfter(t *testing.T, late []int64, who string, first int64, firstWho string) {
	t.Helper()
	for i, at := range late {
		if at < first {
			t.Errorf("late %s %d entered %d, before %s (%d)", who, i, at, firstWho, first)
		}
	}
}

// goReady runs body on n goroutines in wg, each given a ready to call
// once it is in place, and returns once all of them have called it.
func goReady(wg *sync.WaitGroup, n int, body func(ready func())) {
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		wg.Go(func() { body(started.Done) })
	}
	started.Wait()
}

// TestRWWriterBound checks the writer's bound: once a writer at the queue
// head has set W, no reader enters before it; it waits only for the
// readers inside. Readers hold the lock, a writer queues behind them,
// and new readers arrive after W is set: the writer must go first.
func TestRWWriterBound(t *testing.T) {
	forEachRW(t, func(t *testing.T, l *RWLock) {
		const holders, late = 3, 4
		var order seq
		release := make(chan struct{})
		var all sync.WaitGroup
		goReady(&all, holders, func(ready func()) {
			l.RLock()
			ready()
			<-release
			l.RUnlock()
		})
		var wrote int64
		order.take(&all, l.Lock, l.Unlock, &wrote)
		testkit.WaitFor(t, "the writer to set W", func() bool { return l.word.Load()&rwWaiting != 0 })
		// The late readers add their count, find W and queue behind the
		// writer.
		reads := order.late(t, &all, late, l.RLock, l.RUnlock, "readers hold the lock and a writer waits")
		close(release)
		all.Wait()
		wantAfter(t, reads, "reader", wrote, "the waiting writer")
	})
}

// TestRWReaderBound checks the reader's bound: once a reader at the queue
// head has added its count, no writer enters before it; it waits only for
// the writer inside. A writer holds the lock, a reader queues, and new
// writers arrive after the reader is head: the reader must go first.
func TestRWReaderBound(t *testing.T) {
	forEachRW(t, func(t *testing.T, l *RWLock) {
		const late = 4
		var order seq
		var all sync.WaitGroup
		l.Lock()
		var read int64
		order.take(&all, l.RLock, l.RUnlock, &read)
		// The reader is head once it holds the wait lock with its count
		// added: it takes back its first count before it queues, and
		// nobody else uses the wait lock yet.
		testkit.WaitFor(t, "the reader to be queue head", func() bool {
			return l.wait.IsLocked() && l.Readers() == 1
		})
		writes := order.late(t, &all, late, l.Lock, l.Unlock, "a writer holds the lock")
		l.Unlock()
		all.Wait()
		wantAfter(t, writes, "writer", read, "the queued reader")
	})
}

// TestRWNoStarvation runs the streams the bounds are about, on a PV lock
// and a native one: overlapping readers that never leave the lock free,
// while a writer takes it repeatedly; and writers that never leave it
// free, while a reader does. Each must finish (the watchdog fails a
// starved one), and each of its waits stays far below the watchdog.
func TestRWNoStarvation(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for _, v := range variants()[:3] {
		for _, c := range []struct {
			victim, streamers string
			n                 int
			stream, wait      func(l *RWLock)
		}{
			{"writer", "readers", 4, func(l *RWLock) { l.RLock(); busy(8); l.RUnlock() }, func(l *RWLock) { l.Lock(); l.Unlock() }},
			{"reader", "writers", 2, func(l *RWLock) { l.Lock(); busy(8); l.Unlock() }, func(l *RWLock) { l.RLock(); l.RUnlock() }},
		} {
			t.Run(v.name+"/"+c.victim, func(t *testing.T) {
				l := NewRW(v.opts...)
				worst := streamAgainst(t, l, c.n, rounds, func() { c.stream(l) }, func() { c.wait(l) })
				t.Logf("longest %s wait among %d %s: %v", c.victim, c.n, c.streamers, worst)
			})
		}
	}
}

// busy spins for n pauses: a critical section that lasts.
func busy(n int) {
	for range n {
		relax.Pause(1)
	}
}

// streamAgainst runs stream on n goroutines until one run of victim,
// rounds times over, is done, and returns the longest victim wait. The
// streamers start together and keep the lock busy throughout.
func streamAgainst(t *testing.T, l *RWLock, n, rounds int, stream, victim func()) time.Duration {
	t.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	goReady(&wg, n, func(ready func()) {
		ready()
		for !stop.Load() {
			stream()
		}
	})
	wd := testkit.Watchdog(time.Minute, "RWLock starvation "+l.Mode().String(), rwDump(l))
	var worst time.Duration
	for range rounds {
		t0 := time.Now()
		victim()
		worst = max(worst, time.Since(t0))
	}
	wd.Stop()
	stop.Store(true)
	wg.Wait()
	// Scheduling noise under -race and a loaded host make single waits
	// of many milliseconds possible; a starved victim waits for the
	// watchdog. The bound checked here only rules out waits of the
	// order of the whole stream.
	if worst > 10*time.Second {
		t.Errorf("a %v wait out of %d", worst, rounds)
	}
	return worst
}
