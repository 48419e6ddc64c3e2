//go:build linux && !pvlock_portable

package kick

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkHandoff measures the physical cost a FIFO lock pays for each
// hand-off to a waiter that is not running: a ping-pong between two
// threads, each halting until the other kicks it. One op is one round
// trip, two hand-offs. The threads are pinned to the same CPU (the next
// waiter shares the releaser's CPU: a context switch) or to two CPUs (a
// cross-CPU wake-up, an IPI in a VM). "futex" sleeps at once; "poll"
// halt-polls first, as a vCPU does while its CPU would otherwise idle;
// "yield" spins on a flag and sched_yields, the cheapest same-CPU switch.
//
//	go test -run '^$' -bench Handoff ./kick
func BenchmarkHandoff(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two CPUs")
	}
	for _, c := range []struct {
		name       string
		cpuA, cpuB int
		poll       time.Duration
	}{
		{"same-cpu/futex", 0, 0, 0},
		{"cross-cpu/futex", 0, 1, 0},
		{"cross-cpu/poll", 0, 1, DefaultHaltPoll},
	} {
		b.Run(c.name, func(b *testing.B) {
			max, adaptive := HaltPoll()
			defer SetHaltPoll(max, adaptive)
			SetHaltPoll(c.poll, false)
			a, z := NewWaiter(Futex), NewWaiter(Futex)
			if c.poll > 0 { // each alone on its CPU: polling is free
				da, dz := NewDomain(1), NewDomain(1)
				da.Enter()
				dz.Enter()
				a.SetDomain(da)
				z.SetDomain(dz)
			}
			pingPong(b, c.cpuA, c.cpuB, func(me, peer *Waiter) {
				me.Arm()
				peer.Kick()
				haltUntilKicked(me)
			}, a, z)
			b.ReportMetric(float64(a.Counters().Spurious+z.Counters().Spurious)/float64(b.N), "spurious/op")
		})
	}
	b.Run("same-cpu/yield", func(b *testing.B) {
		var turn atomic.Int32
		pingPongYield(b, &turn)
	})
}

// pingPong runs b.N round trips between two threads pinned to cpuA and
// cpuB: the first passes the turn with step(a, z), the second answers with
// step(z, a).
func pingPong(b *testing.B, cpuA, cpuB int, step func(me, peer *Waiter), a, z *Waiter) {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Add(1)
	go func() { // the answering side: waits first
		defer wg.Done()
		pin(b, cpuB)
		z.Arm()
		close(ready)
		haltUntilKicked(z)
		for i := 0; i < b.N; i++ {
			if i == b.N-1 {
				a.Kick()
				return
			}
			step(z, a)
		}
	}()
	<-ready
	done := make(chan struct{})
	go func() {
		defer close(done)
		pin(b, cpuA)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			step(a, z)
		}
		b.StopTimer()
	}()
	<-done
	wg.Wait()
}

// haltUntilKicked halts w until a kick ends the halt. A futex sleep may
// also end with no kick for it: a kicker's wake that lands after its
// waiter already left, here or in an earlier benchmark whose waiter had
// the same address, wakes whoever sleeps on that address now. Each side
// of a ping-pong halts once per kick, so a halt that returned on such a
// wake would put the two sides out of step, and the last halt would wait
// for a kick that never comes.
func haltUntilKicked(w *Waiter) {
	for w.Halt(0) != Kicked {
	}
}

func pingPongYield(b *testing.B, turn *atomic.Int32) {
	var wg sync.WaitGroup
	run := func(me int32, first bool) {
		defer wg.Done()
		pin(b, 0)
		if first {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			for turn.Load() != me {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
			turn.Store(1 - me)
		}
		if first {
			b.StopTimer()
		}
	}
	wg.Add(2)
	go run(0, true)
	go run(1, false)
	wg.Wait()
}

// pin locks the calling goroutine to its thread for good (the goroutine
// exits locked, which ends the thread) and pins the thread to cpu.
func pin(b *testing.B, cpu int) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		b.Fatal(err)
	}
}
