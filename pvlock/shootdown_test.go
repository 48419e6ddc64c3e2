package pvlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// epochs is the shared state of the shootdown tests: a global epoch that
// initiators bump, and each vCPU's cached view of it, which only the
// shootdown handler refreshes. A vCPU's view is a plain variable touched
// only by its own thread, so the race detector also checks that handlers
// run on their target's thread.
type epochs struct {
	epoch     atomic.Uint64 // bumped before each call
	completed atomic.Uint64 // highest epoch whose call has returned
	view      []paddedView
}

type paddedView struct {
	seen uint64 // the vCPU's cached epoch
	runs uint64 // handler runs on the vCPU
	_    [112]byte
}

func newEpochs(n int) *epochs { return &epochs{view: make([]paddedView, n)} }

func (e *epochs) handler(v *pvlock.VCPU) {
	pv := &e.view[v.Index()]
	pv.seen = e.epoch.Load()
	pv.runs++
}

// check is what a vCPU does before every piece of workload code: its view
// must cover every call that has already returned.
func (e *epochs) check(v *pvlock.VCPU, where string) error {
	done := e.completed.Load()
	if seen := e.view[v.Index()].seen; seen < done {
		return fmt.Errorf("vCPU %d ran workload code (%s) with epoch view %d after the call for epoch %d returned",
			v.Index(), where, seen, done)
	}
	return nil
}

func (e *epochs) complete(ep uint64) {
	for {
		c := e.completed.Load()
		if c >= ep || e.completed.CompareAndSwap(c, ep) {
			return
		}
	}
}

// TestShootdownGuarantee overcommits the host 4x: vCPUs contend on a PV
// ticket lock that halts early, idle now and then, and initiate calls both
// under the lock (as munmap flushes under mmap_lock) and outside it, several
// at once. Before every piece of workload code each vCPU checks that its
// view covers every call that has returned; a vCPU that was skipped while
// halted and resumed without running its deferred handler fails the check.
func TestShootdownGuarantee(t *testing.T) {
	d := 1500 * time.Millisecond
	if testing.Short() {
		d = 400 * time.Millisecond
	}
	for _, mode := range []pvlock.ShootdownMode{pvlock.ShootdownPV, pvlock.ShootdownNative} {
		t.Run(mode.String(), func(t *testing.T) {
			vm := locktest.Overcommitted(t, 4)
			e := newEpochs(len(vm.VCPUs()))
			sd, err := pvlock.NewShootdown(vm, mode, e.handler)
			if err != nil {
				t.Fatal(err)
			}
			defer sd.Close()
			mu := ticket.New(ticket.SpinDuration(5 * time.Microsecond))
			var shared uint64
			var calls, acked, kicked, deferred atomic.Int64
			// The run lasts d and until 10 calls have completed (a
			// loaded host may run few in d), within a minute.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			end := time.Now().Add(d)
			more := func() bool { return ctx.Err() == nil && (time.Now().Before(end) || calls.Load() < 10) }
			err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
				if err := e.check(v, "entry"); err != nil {
					return err
				}
				for i := 0; more(); i++ {
					mu.Lock()
					if err := e.check(v, "after Lock"); err != nil {
						mu.Unlock()
						return err
					}
					shared++
					var (
						st  pvlock.CallStats
						ep  uint64
						err error
					)
					underLock := i%37 == 36
					if underLock {
						ep = e.epoch.Add(1)
						st, err = sd.Call(context.Background(), v, nil)
					}
					mu.Unlock()
					if !underLock && (i+v.Index())%53 == 0 {
						ep = e.epoch.Add(1)
						st, err = sd.Call(context.Background(), v, nil)
					}
					if err != nil {
						return err
					}
					if ep != 0 {
						e.complete(ep)
						calls.Add(1)
						acked.Add(int64(st.Acked))
						kicked.Add(int64(st.Kicked))
						deferred.Add(int64(st.Deferred))
					}
					if err := e.check(v, "after Unlock"); err != nil {
						return err
					}
					if i%29 == v.Index()%29 {
						v.Idle(100 * time.Microsecond)
						if err := e.check(v, "after Idle"); err != nil {
							return err
						}
					}
					v.Poll()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d calls, %d acked, %d kicked, %d deferred", mode, calls.Load(), acked.Load(), kicked.Load(), deferred.Load())
			if calls.Load() < 10 {
				t.Fatalf("only %d calls in a minute", calls.Load())
			}
			// The test proves something only if the path it guards was taken.
			switch mode {
			case pvlock.ShootdownPV:
				if deferred.Load() == 0 {
					t.Fatal("no call ever deferred work to a halted vCPU")
				}
				if kicked.Load() != 0 {
					t.Fatalf("PV calls kicked %d vCPUs", kicked.Load())
				}
			case pvlock.ShootdownNative:
				if kicked.Load() == 0 || deferred.Load() != 0 {
					t.Fatalf("native calls kicked %d and deferred %d", kicked.Load(), deferred.Load())
				}
			}
		})
	}
}

// TestShootdownSkipsHaltedVCPU builds the PV case by hand: vCPU 1 idles, a
// PV call from vCPU 0 returns without it, and vCPU 1 runs the handler before
// Idle returns. The native call instead wakes it and waits.
func TestShootdownSkipsHaltedVCPU(t *testing.T) {
	callBetweenTwo(t, func(mode pvlock.ShootdownMode, vm *pvlock.VM, sd *pvlock.Shootdown, runs *[2]atomic.Int64) pvlock.Workload {
		idler := vm.VCPUs()[1]
		return func(ctx context.Context, v *pvlock.VCPU) error {
			if v == idler {
				res := v.Idle(10 * time.Second) // ended by a kick below
				if res == kick.TimedOut {
					return errors.New("idle vCPU was never kicked")
				}
				if runs[1].Load() != 1 {
					return fmt.Errorf("%s: Idle returned to workload code with %d handler runs, want 1", mode, runs[1].Load())
				}
				return nil
			}
			for idler.State() != pvlock.VCPUHalted {
				time.Sleep(100 * time.Microsecond)
			}
			st, err := sd.Call(ctx, v, nil)
			if err != nil {
				return err
			}
			switch mode {
			case pvlock.ShootdownPV:
				if st != (pvlock.CallStats{Acked: 1, Deferred: 1}) || runs[1].Load() != 0 {
					return fmt.Errorf("PV call: %+v, idle vCPU ran the handler %d times while halted", st, runs[1].Load())
				}
				idler.Waiter().Kick()
			case pvlock.ShootdownNative:
				if st != (pvlock.CallStats{Acked: 2, Kicked: 1}) || runs[1].Load() != 1 {
					return fmt.Errorf("native call: %+v, idle vCPU ran the handler %d times", st, runs[1].Load())
				}
			}
			if runs[0].Load() != 1 {
				return fmt.Errorf("the initiator ran its own handler %d times", runs[0].Load())
			}
			return nil
		}
	})
}

// callBetweenTwo runs, for each shootdown mode, a VM of two vCPUs with a
// Shootdown whose handler counts its runs on each vCPU in runs; workload
// returns what the vCPUs run.
func callBetweenTwo(t *testing.T, workload func(mode pvlock.ShootdownMode, vm *pvlock.VM, sd *pvlock.Shootdown, runs *[2]atomic.Int64) pvlock.Workload) {
	t.Helper()
	for _, mode := range []pvlock.ShootdownMode{pvlock.ShootdownPV, pvlock.ShootdownNative} {
		vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2})
		var runs [2]atomic.Int64
		sd, err := pvlock.NewShootdown(vm, mode, func(v *pvlock.VCPU) { runs[v.Index()].Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		err = vm.Run(context.Background(), workload(mode, vm, sd, &runs))
		sd.Close()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
}

// TestShootdownOffline posts to a VM that is not running: nobody is waited
// for, and every vCPU runs the handler as it enters its workload.
func TestShootdownOffline(t *testing.T) {
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 3})
	e := newEpochs(3)
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownNative, e.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	for _, v := range vm.VCPUs() {
		if v.State() != pvlock.VCPUOffline {
			t.Fatalf("vCPU %d of a stopped VM is %v", v.Index(), v.State())
		}
	}
	e.complete(e.epoch.Add(1))
	st, err := sd.Call(context.Background(), nil, nil)
	if err != nil || st != (pvlock.CallStats{Offline: 3}) {
		t.Fatalf("Call on a stopped VM = %+v, %v", st, err)
	}
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		if v.State() != pvlock.VCPURunning {
			return fmt.Errorf("vCPU %d in its workload is %v", v.Index(), v.State())
		}
		return e.check(v, "entry")
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range e.view {
		if e.view[i].runs != 1 {
			t.Fatalf("vCPU %d ran the handler %d times, want once (coalesced)", i, e.view[i].runs)
		}
	}
}

// TestShootdownConcurrentInitiators has every vCPU call every other vCPU at
// once, none of them polling except inside Call: each initiator must serve
// the calls aimed at it while it waits, or they deadlock.
func TestShootdownConcurrentInitiators(t *testing.T) {
	vm := locktest.Overcommitted(t, 2)
	nvcpus := len(vm.VCPUs())
	e := newEpochs(nvcpus)
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownNative, e.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const calls = 100
	var arrived, finished atomic.Int64
	n := int64(nvcpus)
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		// Start together: a vCPU that has not entered its workload yet
		// is offline and would not acknowledge.
		arrived.Add(1)
		for arrived.Load() < n && ctx.Err() == nil {
			v.Poll()
		}
		for i := 0; i < calls; i++ {
			ep := e.epoch.Add(1)
			st, err := sd.Call(ctx, v, nil)
			if err != nil {
				return err
			}
			if st.Acked != nvcpus {
				return fmt.Errorf("call acked by %d of %d running vCPUs: %+v", st.Acked, nvcpus, st)
			}
			e.complete(ep)
			if err := e.check(v, "after Call"); err != nil {
				return err
			}
		}
		// Keep serving until everyone is done calling.
		finished.Add(1)
		for finished.Load() < n && ctx.Err() == nil {
			v.Poll()
		}
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShootdownAckedBySpinningWaiter calls, while holding a native ticket
// lock, a vCPU that spins on that lock and never halts: only the poll in the
// lock's spin loop can acknowledge, and without it the call would wait
// until its deadline.
func TestShootdownAckedBySpinningWaiter(t *testing.T) {
	callBetweenTwo(t, func(_ pvlock.ShootdownMode, _ *pvlock.VM, sd *pvlock.Shootdown, runs *[2]atomic.Int64) pvlock.Workload {
		mu := ticket.New(ticket.Native())
		mu.Lock()
		return func(ctx context.Context, v *pvlock.VCPU) error {
			if v.Index() == 1 {
				mu.Lock() // spins until vCPU 0 unlocks
				mu.Unlock()
				return nil
			}
			defer mu.Unlock()
			for !mu.IsContended() {
				time.Sleep(50 * time.Microsecond)
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			st, err := sd.Call(cctx, v, nil)
			if err != nil {
				return err
			}
			if st != (pvlock.CallStats{Acked: 2}) || runs[1].Load() != 1 {
				return fmt.Errorf("%+v, spinning vCPU ran the handler %d times", st, runs[1].Load())
			}
			return nil
		}
	})
}

func TestShootdownErrors(t *testing.T) {
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2})
	other := locktest.NewVM(t, pvlock.Config{VCPUs: 1})
	nop := func(*pvlock.VCPU) {}
	for _, c := range []struct {
		vm   *pvlock.VM
		mode pvlock.ShootdownMode
		fn   func(*pvlock.VCPU)
		want string
	}{
		{nil, pvlock.ShootdownPV, nop, "nil VM"},
		{vm, pvlock.ShootdownPV, nil, "nil handler"},
		{vm, pvlock.ShootdownMode(9), nop, "unknown mode"},
	} {
		if _, err := pvlock.NewShootdown(c.vm, c.mode, c.fn); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewShootdown(%v, %v) = %v, want %q", c.vm, c.mode, err, c.want)
		}
	}
	var handled atomic.Int64
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownPV, func(*pvlock.VCPU) { handled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sd.Call(ctx, nil, other.VCPUs()); err == nil || !strings.Contains(err.Error(), "not a vCPU of this VM") {
		t.Errorf("foreign target: %v", err)
	}
	if _, err := sd.Call(ctx, other.VCPUs()[0], nil); err == nil || !strings.Contains(err.Error(), "called by vCPU") {
		t.Errorf("foreign self: %v", err)
	}
	if _, err := sd.Call(ctx, vm.VCPUs()[0], nil); err == nil || !strings.Contains(err.Error(), "not the calling thread") {
		t.Errorf("self of a stopped VM: %v", err)
	}

	// A running target that never polls: the call ends with ctx, and the
	// request is still served at the target's next poll.
	var release atomic.Bool
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 1 {
			for !release.Load() {
			}
			v.Poll()
			if handled.Load() != 1 {
				return fmt.Errorf("handler ran %d times after the poll, want 1", handled.Load())
			}
			return nil
		}
		defer release.Store(true)
		for vm.VCPUs()[1].State() != pvlock.VCPURunning {
			time.Sleep(100 * time.Microsecond)
		}
		if _, err := sd.Call(ctx, vm.VCPUs()[1], nil); err == nil || !strings.Contains(err.Error(), "not the calling thread") {
			return fmt.Errorf("self on another thread: %v", err)
		}
		tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err := sd.Call(tctx, v, vm.VCPUs()[1:])
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 vCPUs did not acknowledge") {
			return fmt.Errorf("call on a vCPU that never polls = %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sd.Close()
	sd.Close()
	if _, err := sd.Call(ctx, nil, nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("call after Close: %v", err)
	}
}

// BenchmarkPoll is the cost a running vCPU pays per operation when nothing
// is posted.
func BenchmarkPoll(b *testing.B) {
	vm := locktest.NewVM(b, pvlock.Config{VCPUs: 1})
	b.ReportAllocs()
	err := vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v.Poll()
		}
		b.StopTimer()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
