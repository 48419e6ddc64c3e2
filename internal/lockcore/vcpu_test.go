package lockcore

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pvlock/pvlock/kick"
)

// TestOfFindsOnlyTheAttachedWaiter checks the lock core's identity table:
// Of finds a vCPU from its own waiter while it is attached, and never from
// another waiter with the same Slot (one bound outside pvlock, whose Slot
// is 0 unless set), a pooled waiter or nil.
func TestOfFindsOnlyTheAttachedWaiter(t *testing.T) {
	const slot = MaxVCPUs - 1 // no test vCPU uses it
	w := kick.NewWaiter(kick.Futex)
	var v VCPU
	polls := 0
	v.Init(w, func() { polls++ })
	if Of(w) != nil {
		t.Fatal("Of found a vCPU that is not attached yet")
	}
	v.Attach(slot)
	defer v.Detach() // on a skip; Detach is idempotent
	if w.Slot != slot {
		t.Errorf("Attach set the waiter's Slot to %d, want %d", w.Slot, slot)
	}
	if Of(w) != &v {
		t.Error("Of did not find the attached vCPU from its waiter")
	}
	foreign := kick.NewWaiter(kick.Futex)
	foreign.Slot = slot
	if Of(foreign) != nil {
		t.Error("Of found a vCPU from a foreign waiter with its Slot")
	}
	pooled := kick.Get()
	if Of(pooled) != nil {
		t.Error("Of found a vCPU from a pooled waiter")
	}
	kick.Put(pooled)
	if Of(nil) != nil {
		t.Error("Of(nil) found a vCPU")
	}
	if n := testing.AllocsPerRun(100, func() { _ = Of(w) }); n != 0 {
		t.Errorf("Of allocates %v times", n)
	}

	// Bound to this thread, the waiter leads PollCurrent to the vCPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := kick.Bind(w); err != nil {
		t.Skip(err) // no way to identify the thread in this build
	}
	PollCurrent()
	kick.Unbind()
	if polls != 1 {
		t.Errorf("PollCurrent on the vCPU's thread polled %d times, want 1", polls)
	}

	v.Detach()
	if Of(w) != nil {
		t.Error("Of found a detached vCPU")
	}
}

// TestSpinnerOnVCPU checks that a spinner knows whether it spins on a vCPU,
// which sets how often pv-qspin's contender looks at the lock word: a
// goroutine's spinner is not a vCPU's, and one started on the thread of an
// attached, bound vCPU is, with a fixed threshold too.
func TestSpinnerOnVCPU(t *testing.T) {
	if sp := NewSpinner(ShortSpin, false); sp.OnVCPU() {
		t.Error("a goroutine's spinner reports a vCPU")
	}
	const slot = MaxVCPUs - 2 // no test vCPU uses it
	w := kick.NewWaiter(kick.Futex)
	var v VCPU
	v.Init(w, func() {})
	v.Attach(slot)
	defer v.Detach()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := kick.Bind(w); err != nil {
		t.Skip(err) // no way to identify the thread in this build
	}
	defer kick.Unbind()
	for _, fixed := range []bool{false, true} {
		if sp := NewSpinner(ShortSpin, fixed); !sp.OnVCPU() {
			t.Errorf("a vCPU's spinner (fixed %v) does not report its vCPU", fixed)
		}
	}
}

// TestStealSpin checks the spin of a waiter of a lock with stealing: a
// goroutine spins ShortSpin, as sync.Mutex's waiters spin briefly, and so
// does a vCPU alone on its CPU; a vCPU that shares its CPU spins as long
// as the sibling floor's budget allows (stealSpin): 1024 polls at 2x-4x,
// 256 at 8x, ShortSpin again from 16x on. Its sibling window is set wide
// here, so that the siblings, runnable in this test, do not cut the spin
// short.
func TestStealSpin(t *testing.T) {
	spins := func() uint32 {
		sp := Spin{}.Spinner(true, true)
		for sp.Spin() {
		}
		return sp.Spins()
	}
	if n := spins(); n != ShortSpin {
		t.Errorf("a goroutine's spin on a lock with stealing lasted %d spins, want %d", n, ShortSpin)
	}
	for _, c := range []struct{ perCPU, want uint32 }{
		{1, ShortSpin}, {2, 1024}, {3, 1024}, {4, 1024}, {8, 256}, {16, ShortSpin}, {128, ShortSpin},
	} {
		d := kick.NewDomain(1)
		done := fakeVCPU(t, MaxVCPUs-4, d)
		for range c.perCPU - 1 {
			d.Enter() // a sibling homed on the same CPU
		}
		Of(kick.Current()).sibSpin.Store(maxSiblingSpin)
		if n := spins(); n != c.want {
			t.Errorf("at %dx, a vCPU's spin on a lock with stealing lasted %d spins, want %d", c.perCPU, n, c.want)
		}
		for range c.perCPU - 1 {
			d.Leave()
		}
		done()
	}
}

// TestSiblingWindowFloor checks the adaptive sibling window of a vCPU
// whose CPU is contended, at 2x and at 16x, where the sibling floor is the
// window's own floor: a waiter spins its window and halts, each such
// give-up halves the window but never below minSiblingSpin, and a wait won
// while the sibling waited doubles it.
func TestSiblingWindowFloor(t *testing.T) {
	for _, homed := range []int{2, 16} {
		t.Run(fmt.Sprintf("%dx", homed), func(t *testing.T) {
			d := kick.NewDomain(1)
			for range homed {
				d.Enter() // runnable vCPUs on one CPU: contended
			}
			v := bindTestVCPU(t, d)
			if got := v.SiblingSpin(); got != initialSiblingSpin {
				t.Fatalf("a new vCPU's window is %d, want %d", got, initialSiblingSpin)
			}
			// A wait won after the sibling was seen doubles the window;
			// give-ups then halve it down to the floor, and no further.
			sp := NewSpinner(DefaultSpinThreshold, false)
			for sp.Spins() < siblingCheckEvery {
				sp.Spin()
			}
			sp.Acquired()
			if got, want := v.SiblingSpin(), uint32(2*minSiblingSpin); got != want {
				t.Fatalf("a wait won beside a sibling left the window at %d, want %d", got, want)
			}
			for i, want := range []uint32{2 * minSiblingSpin, minSiblingSpin, minSiblingSpin} {
				if n := spinOut(); n != want {
					t.Fatalf("give-up %d spun %d polls, want the window, %d", i, n, want)
				}
			}
			if got := v.SiblingSpin(); got != minSiblingSpin {
				t.Fatalf("after give-ups the window is %d, want the floor %d", got, minSiblingSpin)
			}
			// An idle CPU is no reason to halt: with the siblings gone, the
			// waiter spins past the window.
			for range homed - 1 {
				d.Leave()
			}
			sp = NewSpinner(DefaultSpinThreshold, false)
			for sp.Spins() < 2*minSiblingSpin {
				if !sp.Spin() {
					t.Fatalf("halted after %d polls on an uncontended CPU", sp.Spins())
				}
			}
		})
	}
}

// TestSiblingFloor checks the sibling floor at 4x: a waiter whose window
// is at its least spins the floor beside its siblings before it halts, and
// its window still halves; a window above the floor is spun in full; and
// with the siblings halted the waiter spins past both.
func TestSiblingFloor(t *testing.T) {
	const homed = 4
	d := kick.NewDomain(1)
	for range homed {
		d.Enter()
	}
	v := bindTestVCPU(t, d)
	floor := siblingFloor(d)
	if floor <= minSiblingSpin {
		t.Fatalf("the floor at %dx is %d, no more than the window's least, %d", homed, floor, minSiblingSpin)
	}
	if n := spinOut(); n != floor {
		t.Fatalf("a give-up beside %d siblings spun %d polls, want the floor, %d", homed-1, n, floor)
	}
	if got := v.SiblingSpin(); got != minSiblingSpin {
		t.Fatalf("after a give-up at the floor the window is %d, want %d", got, minSiblingSpin)
	}
	// A wait won beside the siblings after more than the floor sets the
	// window to that spin, and the next give-up spins all of it.
	sp := NewSpinner(DefaultSpinThreshold, false)
	for sp.Spins() < 3*floor {
		sp.Spin()
	}
	sp.Acquired()
	if got := v.SiblingSpin(); got != 3*floor {
		t.Fatalf("a wait won after %d polls left the window at %d, want %d", 3*floor, got, 3*floor)
	}
	if n := spinOut(); n != 3*floor {
		t.Fatalf("a give-up spun %d polls, want the window, %d", n, 3*floor)
	}
	wake := haltSiblings(t, d, homed-1)
	defer wake()
	sp = NewSpinner(DefaultSpinThreshold, false)
	for sp.Spins() < 4*floor {
		if !sp.Spin() {
			t.Fatalf("halted after %d polls with every sibling halted", sp.Spins())
		}
	}
}

// bindTestVCPU makes the calling goroutine, locked to its thread until the
// test ends, a vCPU homed in d.
func bindTestVCPU(t *testing.T, d *kick.Domain) *VCPU {
	t.Helper()
	const slot = MaxVCPUs - 3 // no other test vCPU uses it
	w := kick.NewWaiter(kick.Futex)
	w.SetDomain(d)
	v := new(VCPU)
	v.Init(w, func() {})
	v.Attach(slot)
	t.Cleanup(v.Detach)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := kick.Bind(w); err != nil {
		t.Skip(err) // no way to identify the thread in this build
	}
	t.Cleanup(kick.Unbind)
	return v
}

// spinOut runs a spin phase of the calling vCPU until it gives up, and
// returns its spins.
func spinOut() uint32 {
	sp := NewSpinner(DefaultSpinThreshold, false)
	for sp.Spin() {
	}
	return sp.Spins()
}

// haltSiblings halts k waiters homed in d, each on its own goroutine, and
// returns once d counts them halted; the function it returns kicks them
// and waits for them.
func haltSiblings(t *testing.T, d *kick.Domain, k int) (wake func()) {
	t.Helper()
	before := d.Runnable()
	ws := make([]*kick.Waiter, k)
	done := make(chan struct{}, k)
	for i := range ws {
		w := kick.NewWaiter(kick.Futex)
		w.SetDomain(d)
		w.Arm()
		ws[i] = w
		go func() {
			for w.Sleep(0) != kick.Kicked {
			}
			done <- struct{}{}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.Runnable() != before-k {
		if time.Now().After(deadline) {
			t.Fatalf("%d runnable after halting %d of %d", d.Runnable(), k, before)
		}
		time.Sleep(time.Millisecond)
	}
	return func() {
		for _, w := range ws {
			w.Kick()
		}
		for range ws {
			<-done
		}
	}
}

// TestSiblingFloorByOvercommit checks the floor's scale: none below 3x,
// the longest at 3x and 4x, shrinking with the square of the vCPUs per CPU,
// and none again from 16x on, counted per CPU in a domain of several.
func TestSiblingFloorByOvercommit(t *testing.T) {
	for _, c := range []struct {
		cpus, homed int
		want        uint32
	}{
		{1, 0, minSiblingSpin},
		{1, 1, minSiblingSpin},
		{1, 2, minSiblingSpin},
		{1, 3, maxSiblingFloor},
		{1, 4, maxSiblingFloor},
		{1, 5, siblingFloorBudget / 25},
		{1, 8, siblingFloorBudget / 64},
		{1, 16, minSiblingSpin},
		{1, 256, minSiblingSpin},
		{2, 4, minSiblingSpin},          // 2 per CPU
		{2, 5, maxSiblingFloor},         // 2.5 per CPU, rounded up
		{2, 8, maxSiblingFloor},         // 4 per CPU
		{2, 9, siblingFloorBudget / 25}, // 4.5 per CPU, rounded up
		{2, 32, minSiblingSpin},
	} {
		d := kick.NewDomain(c.cpus)
		for range c.homed {
			d.Enter()
		}
		if got := siblingFloor(d); got != c.want {
			t.Errorf("%d vCPUs on %d CPUs: floor %d, want %d", c.homed, c.cpus, got, c.want)
		}
	}
}
