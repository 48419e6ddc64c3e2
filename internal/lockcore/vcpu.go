package lockcore

import (
	"sync/atomic"

	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// MaxVCPUs is the largest number of vCPUs that may exist at once across
// all VMs (pvlock.MaxVCPUs): it bounds the per-vCPU slots of Stats and the
// vCPU field of the queued lock's tail.
const MaxVCPUs = lockstat.Slots

// VCPU is the part of a pvlock vCPU that lock waiters use: its adaptive
// sibling spin window and its poll of cross-vCPU calls. A pvlock.VCPU holds
// one and makes it the Owner of its kick.Waiter, which is how a waiter
// finds it from the calling thread (kick.Current).
type VCPU struct {
	sibSpin atomic.Uint32 // spins while a sibling vCPU waits for the CPU (spin.go)
	poll    func()        // serves the vCPU's posted cross-vCPU calls
}

// Init prepares v for a vCPU whose cross-vCPU calls poll serves, and makes
// it the owner of w.
func (v *VCPU) Init(w *kick.Waiter, poll func()) {
	v.poll = poll
	v.sibSpin.Store(initialSiblingSpin)
	w.Owner = v
}

// SiblingSpin returns the vCPU's current sibling window: how many spins
// its PV waiters spend while another vCPU waits for its CPU.
func (v *VCPU) SiblingSpin() uint32 { return v.sibSpin.Load() }

// Of returns the vCPU that owns w, or nil if w belongs to no vCPU.
func Of(w *kick.Waiter) *VCPU {
	v, _ := w.Owner.(*VCPU)
	return v
}

// SpinPollEvery is how many spins a lock's spin loop lets pass between two
// polls of cross-vCPU calls: about 25 µs of spinning here, so the poll
// costs about 1% of a spin and a spinning vCPU acknowledges a call within
// tens of µs.
const SpinPollEvery = 1024

// PollCurrent serves the cross-vCPU calls posted to the vCPU of the calling
// thread, if the thread is a vCPU, and does nothing otherwise. Lock spin
// loops call it every SpinPollEvery spins (Pause), so that a vCPU spinning
// for a lock acknowledges calls as a CPU spinning with interrupts enabled
// would. It costs a gettid system call and a lookup (a fraction of a
// microsecond): never call it on a fast path.
func PollCurrent() {
	if w := kick.Current(); w != nil {
		if v, ok := w.Owner.(*VCPU); ok {
			v.poll()
		}
	}
}
