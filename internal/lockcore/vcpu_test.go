package lockcore

import (
	"runtime"
	"testing"

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

// TestSiblingWindowFloor checks the adaptive sibling window of a vCPU
// whose CPU is contended: a waiter spins its window and halts, each such
// give-up halves the window but never below minSiblingSpin, and a wait won
// while the sibling waited doubles it.
func TestSiblingWindowFloor(t *testing.T) {
	const slot = MaxVCPUs - 3 // no test vCPU uses it
	w := kick.NewWaiter(kick.Futex)
	d := kick.NewDomain(1)
	d.Enter()
	d.Enter() // two runnable vCPUs on one CPU: contended
	w.SetDomain(d)
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

	if got := v.SiblingSpin(); got != initialSiblingSpin {
		t.Fatalf("a new vCPU's window is %d, want %d", got, initialSiblingSpin)
	}
	spin := func() uint32 {
		sp := NewSpinner(DefaultSpinThreshold, false)
		for sp.Spin() {
		}
		return sp.Spins()
	}
	// A wait won after the sibling was seen doubles the window; give-ups
	// then halve it down to the floor, and no further.
	sp := NewSpinner(DefaultSpinThreshold, false)
	for sp.Spins() < siblingCheckEvery {
		sp.Spin()
	}
	sp.Acquired()
	if got, want := v.SiblingSpin(), uint32(2*minSiblingSpin); got != want {
		t.Fatalf("a wait won beside a sibling left the window at %d, want %d", got, want)
	}
	for i, want := range []uint32{2 * minSiblingSpin, minSiblingSpin, minSiblingSpin} {
		if n := spin(); n != want {
			t.Fatalf("give-up %d spun %d polls, want the window, %d", i, n, want)
		}
	}
	if got := v.SiblingSpin(); got != minSiblingSpin {
		t.Fatalf("after give-ups the window is %d, want the floor %d", got, minSiblingSpin)
	}
	// An idle CPU is no reason to halt: with the sibling gone, the waiter
	// spins past the window.
	d.Leave()
	sp = NewSpinner(DefaultSpinThreshold, false)
	for sp.Spins() < 2*minSiblingSpin {
		if !sp.Spin() {
			t.Fatalf("halted after %d polls on an uncontended CPU", sp.Spins())
		}
	}
}
