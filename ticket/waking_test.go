package ticket

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
)

// TestWakingHintRetiredByHolder checks that the waking hint lasts only
// while the kicked holder of the next ticket is waking: once that holder
// runs and owns the lock, the hint is gone, so arrivals during its critical
// section spin as usual instead of halting at once.
func TestWakingHintRetiredByHolder(t *testing.T) {
	l := New(SpinThreshold(1))
	before := Stats(ModePV).Snapshot()
	l.Lock()
	inc, _ := l.inc()
	next := uint32(l.word.Load()) + inc
	acquired := make(chan uint32) // the hint as the woken holder sees it
	release := make(chan struct{})
	go func() {
		l.Lock()
		acquired <- l.waking.Load()
		<-release
		l.Unlock()
	}()
	testkit.WaitFor(t, "the next ticket's holder to halt", func() bool { return waiters.Lookup(lockcore.Key(l), uint64(next)) })
	l.Unlock() // kicks the halted holder of next
	var hint uint32
	select {
	case hint = <-acquired:
	case <-time.After(10 * time.Second):
		t.Fatal("the halted waiter was never kicked")
	}
	close(release)
	if hint != 0 {
		t.Fatalf("the kicked holder of ticket %d owns the lock, yet the waking hint is still %#x", next, hint)
	}
	if d := checkClean(t, before); d.Get(ReleasedSlowKicked) != 1 {
		t.Fatalf("kicked releases %d, want 1", d.Get(ReleasedSlowKicked))
	}
}

// TestNoPVSpinWakingHintStillPolls checks that with PV spinning off a waiter
// keeps polling for cross-vCPU calls even while the waking hint names the
// served ticket: the early halt is a halt, and with halting off it must
// not turn into a tight loop that no native shootdown can get through.
func TestNoPVSpinWakingHintStillPolls(t *testing.T) {
	defer locktest.SetPolicy(func(p *pvlock.Policy) { p.PVSpin = false })()
	l := New()
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2})
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownNative, func(*pvlock.VCPU) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	l.Lock()
	l.waking.Store(uint32(l.word.Load()) | 1) // the served ticket's holder "is waking"
	var waiting atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 1 {
			waiting.Store(true)
			l.Lock() // spins: the lock is held by the test
			l.Unlock()
			return nil
		}
		for !waiting.Load() {
			v.Poll()
		}
		time.Sleep(10 * time.Millisecond) // let vCPU 1 reach its spin loop
		callCtx, stop := context.WithTimeout(ctx, 5*time.Second)
		_, err := sd.Call(callCtx, v, nil)
		stop()
		l.Unlock()
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("a native shootdown timed out: the spinning waiter never acknowledged it")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// panicHook is a halt hook that panics on the way into the halt, as a
// cross-vCPU call's handler run there might.
type panicHook struct{}

func (panicHook) Halting() { panic("handler failed") }
func (panicHook) Resumed() {}

// TestHaltPanicWithdraws checks that a waiter whose halt panics is no
// longer published: a later kick for its ticket must not reach it, and a
// reused waiter must never stay linked in the table.
func TestHaltPanicWithdraws(t *testing.T) {
	l := New(SpinThreshold(1))
	l.Lock()
	inc, _ := l.inc()
	next := uint32(l.word.Load()) + inc
	recovered := make(chan any)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		w := kick.NewWaiter(kick.Futex)
		w.Hook = panicHook{}
		if err := kick.Bind(w); err != nil {
			recovered <- err
			return
		}
		defer kick.Unbind()
		defer func() { recovered <- recover() }()
		l.Lock()
	}()
	if r := <-recovered; r != "handler failed" {
		t.Fatalf("the halt returned %v, want the hook's panic", r)
	}
	if waiters.Lookup(lockcore.Key(l), uint64(next)) {
		t.Fatal("the waiter whose halt panicked is still published in the table")
	}
}
