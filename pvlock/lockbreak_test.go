package pvlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// fakeLock is a Contender whose contention the test sets, recording the
// calls CondRelock makes.
type fakeLock struct {
	held             bool
	contended        bool
	locks, unlocks   int
	contendedQueries int
}

func (f *fakeLock) Lock() {
	if f.held {
		panic("fakeLock: Lock while held")
	}
	f.held = true
	f.locks++
}

func (f *fakeLock) Unlock() {
	if !f.held {
		panic("fakeLock: Unlock while free")
	}
	f.held = false
	f.unlocks++
}

func (f *fakeLock) IsContended() bool {
	f.contendedQueries++
	return f.contended
}

func TestCondRelock(t *testing.T) {
	f := &fakeLock{}
	f.Lock()
	if pvlock.CondRelock(f) || f.unlocks != 0 || !f.held {
		t.Fatalf("uncontended: broke (%+v)", f)
	}
	f.contended = true
	if !pvlock.CondRelock(f) || f.unlocks != 1 || f.locks != 2 || !f.held {
		t.Fatalf("contended: did not break exactly once (%+v)", f)
	}
}

// TestVCPUCondRelockYield checks both ways the host asks a vCPU to yield:
// an explicit request (consumed by one break), and a slice run out after a
// preemption.
func TestVCPUCondRelockYield(t *testing.T) {
	defer locktest.SetPolicy(func(p *pvlock.Policy) { p.YieldSlice = 0 })()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 1})
	err := vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		f := &fakeLock{}
		f.Lock()
		if v.CondRelock(f) {
			return fmt.Errorf("broke with no contention and no request")
		}
		v.RequestYield()
		if !v.CondRelock(f) || f.unlocks != 1 || !f.held || v.Yields() != 1 {
			return fmt.Errorf("explicit request: %+v, %d yields", f, v.Yields())
		}
		if v.CondRelock(f) {
			return fmt.Errorf("the request was not consumed")
		}
		f.contended = true
		if !v.CondRelock(f) || v.Yields() != 1 {
			return fmt.Errorf("contention alone: broke=%v yields=%d, want a break without a yield", f.unlocks == 2, v.Yields())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Two busy vCPUs on one CPU: each is preempted every time slice and
	// runs for longer than a short yield slice after each preemption.
	cpus, _ := pvlock.HostCPUs()
	for _, slice := range []time.Duration{0, 300 * time.Microsecond} {
		locktest.SetPolicy(func(p *pvlock.Policy) { p.YieldSlice = slice })
		vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2, CPUs: cpus[:1]})
		err = locktest.RunFor(vm, 150*time.Millisecond, func(ctx context.Context, v *pvlock.VCPU) error {
			f := &fakeLock{}
			f.Lock()
			for ctx.Err() == nil {
				v.CondRelock(f)
			}
			f.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		yields := vm.VCPUs()[0].Yields() + vm.VCPUs()[1].Yields()
		if slice == 0 && yields != 0 {
			t.Fatalf("slice-based yields off, yet %d yields", yields)
		}
		if slice > 0 && yields == 0 {
			t.Fatalf("two busy vCPUs on one CPU for 150ms never yielded after running %v past a preemption", slice)
		}
	}
}

// TestLockBreakOvercommitted runs one batch vCPU that holds the lock for
// long batches with CondRelock after every step, and short-operation vCPUs,
// at 1x-4x. Mutual exclusion is checked inside every critical section, no
// batch step or short operation may be lost, every batch must complete,
// and short operations must get in while batches are in progress: that is
// what the break is for.
func TestLockBreakOvercommitted(t *testing.T) {
	locks := []struct {
		name string
		new  func() pvlock.Contender
	}{
		{"pv-ticket", func() pvlock.Contender { return ticket.New() }},
		{"native-ticket", func() pvlock.Contender { return ticket.New(ticket.Native()) }},
	}
	for _, lk := range locks {
		for _, oc := range []float64{1, 2, 4} {
			if lk.name == "native-ticket" && oc > 2 {
				continue // a spinning FIFO lock at 4x only measures time slices
			}
			t.Run(fmt.Sprintf("%s/%gx", lk.name, oc), func(t *testing.T) {
				lockBreakRun(t, lk.new(), oc)
			})
		}
	}
}

func lockBreakRun(t *testing.T, mu pvlock.Contender, oc float64) {
	cfg, err := pvlock.Overcommit(oc, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.VCPUs = max(cfg.VCPUs, 2)
	vm := locktest.NewVM(t, cfg)
	const steps = 50 // per batch
	var (
		owner      int  // vCPU index + 1 of the holder, 0 when free
		inBatch    bool // a batch has started and not finished
		batchSteps int  // steps done under the lock
		shortOps   int  // short operations done under the lock
		duringOps  int  // short operations done while a batch was in progress
		scratch    uint64
		batches    int
		breaks     int
		perShort   = make([]int, cfg.VCPUs)
		stop       atomic.Bool
		once       sync.Once
		failure    error
	)
	fail := func(err error) error {
		once.Do(func() { failure = err })
		return failure
	}
	enter := func(me int) error {
		if owner != 0 {
			return fail(fmt.Errorf("mutual exclusion broken: vCPU %d entered while vCPU %d held the lock", me-1, owner-1))
		}
		owner = me
		return nil
	}
	leave := func(me int) error {
		if owner != me {
			return fail(fmt.Errorf("mutual exclusion broken: vCPU %d's critical section saw owner %d", me-1, owner-1))
		}
		owner = 0
		return nil
	}
	// The batch vCPU ends the run once it has run batches for 300ms and
	// some short operation got in during one; a break that never lets
	// anyone in runs into the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		me := v.Index() + 1
		if v.Index() == 0 {
			// Batches run to completion once started, so every step
			// of every started batch must be counted at the end.
			start := time.Now()
			for !stop.Load() && ctx.Err() == nil {
				mu.Lock()
				if err := enter(me); err != nil {
					mu.Unlock()
					return err
				}
				inBatch = true
				for s := 0; s < steps; s++ {
					batchSteps++
					for w := 0; w < 300; w++ { // a step of work on shared state
						scratch = scratch*31 + uint64(w)
					}
					if err := leave(me); err != nil {
						mu.Unlock()
						return err
					}
					broke := v.CondRelock(mu)
					if err := enter(me); err != nil {
						mu.Unlock()
						return err
					}
					if broke {
						breaks++
					}
				}
				inBatch = false
				batches++
				if duringOps > 0 && time.Since(start) >= 300*time.Millisecond {
					stop.Store(true)
				}
				err := leave(me)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			return nil
		}
		local := uint64(me)
		for !stop.Load() && ctx.Err() == nil {
			mu.Lock()
			if err := enter(me); err != nil {
				mu.Unlock()
				return err
			}
			shortOps++
			if inBatch {
				duringOps++
			}
			scratch++
			err := leave(me)
			mu.Unlock()
			if err != nil {
				return err
			}
			perShort[v.Index()]++
			for w := 0; w < 2000; w++ { // work outside the lock
				local = local*31 + uint64(w)
			}
		}
		_ = local
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end in time")
	}
	total := 0
	for _, n := range perShort {
		total += n
	}
	if batchSteps != batches*steps || shortOps != total {
		t.Fatalf("lost updates: %d batch steps in %d batches of %d; %d short ops counted under the lock, %d done",
			batchSteps, batches, steps, shortOps, total)
	}
	if batches == 0 || breaks == 0 || duringOps == 0 {
		t.Fatalf("%d batches, %d breaks, %d short operations inside batches: the break never let anyone in", batches, breaks, duringOps)
	}
	t.Logf("%d vCPUs: %d batches, %d breaks, %d short ops, %d of them inside batches", cfg.VCPUs, batches, breaks, total, duringOps)
}

// BenchmarkCondRelock is the price of the check in a batch loop when
// nobody waits: the lock is held by the benchmark's own vCPU.
func BenchmarkCondRelock(b *testing.B) {
	benchHeld(b, func(v *pvlock.VCPU, mu *ticket.Lock) { pvlock.CondRelock(mu) })
}

// BenchmarkVCPUCondRelock adds the host's yield request and the
// rate-limited steal check.
func BenchmarkVCPUCondRelock(b *testing.B) {
	benchHeld(b, func(v *pvlock.VCPU, mu *ticket.Lock) { v.CondRelock(mu) })
}

func benchHeld(b *testing.B, check func(*pvlock.VCPU, *ticket.Lock)) {
	vm := locktest.NewVM(b, pvlock.Config{VCPUs: 1})
	b.ReportAllocs()
	mu := ticket.New()
	err := vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		mu.Lock()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			check(v, mu)
		}
		b.StopTimer()
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
