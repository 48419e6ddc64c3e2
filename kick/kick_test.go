package kick

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// onLockedThread runs f on a fresh goroutine locked to its own OS thread
// with a futex waiter (a park waiter in a build without futexes) bound to
// it, and waits for it to return.
func onLockedThread(t *testing.T, f func(w *Waiter)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		w := NewWaiter(Futex)
		if err := Bind(w); err != nil {
			t.Error(err)
			return
		}
		defer Unbind()
		f(w)
	}()
	<-done
}

func backends(t *testing.T, f func(t *testing.T, w *Waiter)) {
	t.Run("futex", func(t *testing.T) {
		onLockedThread(t, func(w *Waiter) { f(t, w) })
	})
	t.Run("park", func(t *testing.T) { f(t, NewWaiter(Park)) })
}

func TestKickBeforeHaltIsNotLost(t *testing.T) {
	backends(t, func(t *testing.T, w *Waiter) {
		w.Arm()
		if !w.Kick() {
			t.Fatal("first kick did not deliver a token")
		}
		if w.Kick() {
			t.Fatal("second kick delivered a token while one was pending")
		}
		// No timeout: if the early kick were lost this would hang, so
		// run it with a watchdog.
		res := make(chan Result, 1)
		go func() { res <- w.Halt(0) }()
		if r := testkit.Receive(t, res, 10*time.Second, "Halt slept through a kick that arrived before it"); r != Kicked {
			t.Fatalf("Halt = %v, want kicked", r)
		}
		c := w.Counters()
		if c.EarlyKicks != 1 || c.Halts != 0 || c.KicksReceived != 1 {
			t.Fatalf("counters %+v, want 1 early kick, 0 halts, 1 kick", c)
		}
	})
}

func TestKickWakesSleeper(t *testing.T) {
	backends(t, func(t *testing.T, w *Waiter) {
		for i := 0; i < 200; i++ {
			w.Arm()
			go func() {
				// Give the waiter a chance to really sleep on some rounds.
				if i%4 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				w.Kick()
			}()
			if r := w.Halt(10 * time.Second); r == TimedOut {
				t.Fatalf("round %d: halt timed out: kick lost", i)
			} else if r == Spurious {
				// Legal; the next Halt must still see the kick.
				if r2 := w.Halt(10 * time.Second); r2 != Kicked {
					t.Fatalf("round %d: after spurious wake, Halt = %v", i, r2)
				}
			}
		}
		if c := w.Counters(); c.KicksReceived != 200 || c.Timeouts != 0 {
			t.Fatalf("counters %+v: want 200 kicks and no timeouts", c)
		}
	})
}

func TestHaltTimeout(t *testing.T) {
	backends(t, func(t *testing.T, w *Waiter) {
		w.Arm()
		start := time.Now()
		if r := w.Halt(20 * time.Millisecond); r != TimedOut {
			t.Fatalf("Halt = %v, want timed out", r)
		}
		if d := time.Since(start); d < 20*time.Millisecond {
			t.Fatalf("Halt returned after %v, before its 20ms timeout", d)
		}
		if w.Kicked() {
			t.Fatal("token pending after a timeout with no kick")
		}
		if c := w.Counters(); c.Timeouts != 1 || c.Halts != 1 {
			t.Fatalf("counters %+v, want 1 halt and 1 timeout", c)
		}
		// The waiter is reusable: a later kick is seen.
		w.Arm()
		w.Kick()
		if r := w.Halt(time.Second); r != Kicked {
			t.Fatalf("Halt after re-arm = %v, want kicked", r)
		}
	})
}

// TestFutexBackendWhereAvailable checks that NewWaiter(Futex) gives a
// futex waiter exactly where the build has futexes (Linux without the
// pvlock_portable tag) and a park waiter elsewhere, which then works as
// any park waiter does.
func TestFutexBackendWhereAvailable(t *testing.T) {
	want := Park
	if haveFutex {
		want = Futex
	}
	w := NewWaiter(Futex)
	if w.Backend() != want {
		t.Fatalf("NewWaiter(Futex) has backend %v, want %v (futexes in this build: %v)", w.Backend(), want, haveFutex)
	}
	w.Arm()
	done := make(chan Result)
	go func() { done <- w.Halt(10 * time.Second) }()
	for w.Counters().Halts == 0 {
		time.Sleep(time.Millisecond)
	}
	w.Kick()
	if r := <-done; r != Kicked {
		t.Fatalf("halt returned %v, want kicked", r)
	}
}

func TestGetChoosesBackend(t *testing.T) {
	w := Get()
	if w.Backend() != Park || w.Slot != GoroutineSlot {
		t.Fatalf("plain goroutine got backend %v slot %d, want park", w.Backend(), w.Slot)
	}
	Put(w)
	onLockedThread(t, func(bw *Waiter) {
		if g := Get(); g != bw {
			t.Error("bound thread did not get its own waiter")
		}
		if err := Bind(NewWaiter(Futex)); err == nil {
			t.Error("second Bind on one thread succeeded")
		}
	})
	if Current() != nil {
		t.Fatal("this goroutine's thread has a bound waiter")
	}
}

func TestTableDirectedKick(t *testing.T) {
	var tab Table
	var key1, key2 int
	ws := make([]*Waiter, 8)
	for i := range ws {
		ws[i] = NewWaiter(Park)
		ws[i].Arm()
		tab.Publish(ws[i], uintptr(unsafePtr(&key1)), uint64(i*2))
	}
	other := NewWaiter(Park)
	other.Arm()
	tab.Publish(other, uintptr(unsafePtr(&key2)), 6)

	found, hops := tab.Kick(uintptr(unsafePtr(&key1)), 6)
	if !found || hops < 1 {
		t.Fatalf("Kick(key1, 6) = %v, %d hops", found, hops)
	}
	for i, w := range ws {
		if w.Kicked() != (i == 3) {
			t.Fatalf("waiter %d kicked=%v: the kick was not directed", i, w.Kicked())
		}
	}
	if other.Kicked() {
		t.Fatal("waiter of another lock with the same tag was kicked")
	}
	tab.Withdraw(ws[5])
	tab.Withdraw(ws[5]) // no-op
	if found, _ := tab.Kick(uintptr(unsafePtr(&key1)), 10); found {
		t.Fatal("withdrawn waiter was found")
	}
	if ws[5].Kicked() {
		t.Fatal("withdrawn waiter was kicked")
	}
	if tab.Lookup(uintptr(unsafePtr(&key1)), 99) {
		t.Fatal("Lookup found a key never published")
	}
	for _, w := range ws {
		tab.Withdraw(w)
	}
	tab.Withdraw(other)
}

// TestTableConcurrent publishes, kicks and withdraws from many goroutines;
// every published waiter that halts must be woken by the kicker that
// targets its key.
func TestTableConcurrent(t *testing.T) {
	var tab Table
	var lock int
	const n, rounds = 16, 300
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := NewWaiter(Park)
			for r := 0; r < rounds; r++ {
				tag := uint64(g*rounds + r)
				w.Arm()
				tab.Publish(w, uintptr(unsafePtr(&lock)), tag)
				go tab.Kick(uintptr(unsafePtr(&lock)), tag)
				res := w.Halt(10 * time.Second)
				tab.Withdraw(w)
				if res == TimedOut {
					t.Errorf("goroutine %d round %d: lost kick", g, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	// let the stray kicker goroutines finish before goleak looks
	time.Sleep(10 * time.Millisecond)
}

// TestPutKeepsBoundParkWaiter checks that Put never pools a waiter bound to
// a thread, even one with the Park backend: an unbound goroutine must not
// get it from the pool (its Slot would change to GoroutineSlot), and Put
// must leave its Slot alone.
func TestPutKeepsBoundParkWaiter(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		bw := NewWaiter(Park)
		bw.Slot = 7
		if err := Bind(bw); err != nil {
			t.Error(err)
			return
		}
		w := Get()
		if w != bw {
			Unbind()
			t.Error("bound thread did not get its own waiter")
			return
		}
		Put(w)
		Unbind()
		if bw.Slot != 7 {
			t.Errorf("Put changed the Slot of a bound waiter: %d", bw.Slot)
		}
		// This goroutine is now unbound and still on the same P, whose
		// pool cache would hand back whatever Put stored there.
		got := make([]*Waiter, 0, 8)
		for range 8 {
			g := Get()
			got = append(got, g)
			if g == bw {
				t.Errorf("an unbound goroutine got the bound waiter from the pool (Slot now %d)", bw.Slot)
			}
		}
		for _, g := range got {
			Put(g)
		}
		if bw.Slot != 7 {
			t.Errorf("bound waiter's Slot changed to %d", bw.Slot)
		}
	}()
	<-done
}

// Sleeper names the domain of the waiter published under a key only while
// that waiter sleeps in its halt: not before it halts, not once kicked,
// and never for a waiter without a domain or a key nobody published.
func TestTableSleeper(t *testing.T) {
	var tab Table
	const key, tag = uintptr(0x1000), 7
	d := NewDomain(1)
	w := NewWaiter(Futex)
	w.SetDomain(d)
	if got := tab.Sleeper(key, tag); got != nil {
		t.Fatalf("Sleeper of an empty table: %p, want nil", got)
	}
	w.Arm()
	tab.Publish(w, key, tag)
	if got := tab.Sleeper(key, tag); got != nil {
		t.Fatalf("Sleeper of a published waiter that has not halted: %p, want nil", got)
	}
	res := make(chan Result, 1)
	go func() { res <- w.Sleep(time.Minute) }()
	testkit.WaitFor(t, "the waiter to sleep", func() bool { return tab.Sleeper(key, tag) == d })
	if got := tab.Sleeper(key, tag+1); got != nil {
		t.Fatalf("Sleeper of another tag: %p, want nil", got)
	}
	tab.Kick(key, tag)
	if r := testkit.Receive(t, res, 10*time.Second, "the kicked waiter did not wake"); r != Kicked {
		t.Fatalf("Sleep returned %v, want %v", r, Kicked)
	}
	if got := tab.Sleeper(key, tag); got != nil {
		t.Fatalf("Sleeper of a kicked waiter: %p, want nil", got)
	}
	tab.Withdraw(w)

	// A sleeper with no domain has none to name.
	v := NewWaiter(Futex)
	v.Arm()
	tab.Publish(v, key, tag)
	go func() { res <- v.Sleep(time.Minute) }()
	testkit.WaitFor(t, "the second waiter to sleep", func() bool { return atomic.LoadUint32(&v.state) == stateSleeping })
	if got := tab.Sleeper(key, tag); got != nil {
		t.Fatalf("Sleeper of a waiter without a domain: %p, want nil", got)
	}
	tab.Kick(key, tag)
	testkit.Receive(t, res, 10*time.Second, "the second waiter did not wake")
	tab.Withdraw(v)
}
