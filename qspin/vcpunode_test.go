package qspin

import (
	"runtime"
	"testing"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
)

// TestVCPUNodeOnlyForItsVCPU checks getNode's identity check: a thread
// bound to an attached vCPU's waiter gets that vCPU's node, and a thread
// bound to a waiter of its own with the same Slot (bound outside pvlock)
// gets a pooled node, so that it never shares the vCPU's.
func TestVCPUNodeOnlyForItsVCPU(t *testing.T) {
	const slot = vcpuNodes - 1 // no test vCPU uses it
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	take := func(w *kick.Waiter) *qnode {
		t.Helper()
		if err := kick.Bind(w); err != nil {
			t.Skip(err) // no way to identify the thread in this build
		}
		defer kick.Unbind()
		n, got := getNode()
		if n == nil {
			t.Fatal("no node")
		}
		putNode(n)
		if got != w {
			t.Errorf("getNode returned another waiter than the thread's")
		}
		return n
	}

	vw := kick.NewWaiter(kick.Futex)
	var v lockcore.VCPU
	v.Init(vw, func() {})
	v.Attach(slot)
	defer v.Detach()
	if n := take(vw); n.id != slot {
		t.Errorf("the vCPU's waiter got node %d, want its own node %d", n.id, slot)
	}

	foreign := kick.NewWaiter(kick.Futex)
	foreign.Slot = slot
	if n := take(foreign); n.id < vcpuNodes {
		t.Errorf("a foreign waiter with the vCPU's Slot got per-vCPU node %d", n.id)
	}
}
