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
// one; a waiter finds it from the calling thread's kick.Waiter with Of.
type VCPU struct {
	sibSpin atomic.Uint32 // spins while a sibling vCPU waits for the CPU (spin.go)
	poll    func()        // serves the vCPU's posted cross-vCPU calls
	waiter  *kick.Waiter  // the vCPU's waiter, set by Init
	slot    int           // the index v is attached at, -1 while detached
	// turn is the thread's CPU time (threadCPU) when its last passive
	// wait on a deep queue ended: the start of its turn in the active set
	// (Gate.turnOver); 0 after one on a queue that was not deep.
	turn atomic.Int64
}

// vcpus holds the attached vCPUs, indexed by their global index, which is
// also their waiter's Slot while they run. It is the lock core's own
// identity table: kick knows the thread's waiter, and nothing of vCPUs; the
// lock core maps that waiter to its vCPU here. Entries change only when a
// vCPU starts or stops running, so the lookup (Of) is an index, a load and
// a compare, with no lock and no allocation.
var vcpus [MaxVCPUs]atomic.Pointer[VCPU]

// Init prepares v for a vCPU whose waiter is w and whose cross-vCPU calls
// poll serves. v is not found from w (Of) until it is attached.
func (v *VCPU) Init(w *kick.Waiter, poll func()) {
	v.poll = poll
	v.waiter = w
	v.slot = -1
	v.sibSpin.Store(initialSiblingSpin)
}

// Attach makes v the vCPU of global index slot (0 ≤ slot < MaxVCPUs, unique
// among the running vCPUs) and sets its waiter's Slot to slot. Call it on
// the vCPU's thread before the waiter is bound there (kick.Bind), so that a
// waiter the thread finds (kick.Current) already leads to v, and Detach
// after it is unbound.
func (v *VCPU) Attach(slot int) {
	v.slot = slot
	v.waiter.Slot = slot
	vcpus[slot].Store(v)
}

// Detach undoes Attach: Of no longer finds v. The waiter keeps its Slot.
func (v *VCPU) Detach() {
	if v.slot >= 0 {
		vcpus[v.slot].CompareAndSwap(v, nil)
		v.slot = -1
	}
}

// SiblingSpin returns the vCPU's current sibling window: how many spins
// its PV waiters spend while another vCPU waits for its CPU.
func (v *VCPU) SiblingSpin() uint32 { return v.sibSpin.Load() }

// Of returns the attached vCPU whose waiter w is, or nil if w is nil or
// belongs to no running vCPU. The check is typed: a waiter with a Slot in
// range that is not the vCPU's own waiter (a pooled waiter, or one bound
// outside pvlock, whose Slot is 0 unless set) finds no vCPU.
func Of(w *kick.Waiter) *VCPU {
	if w == nil || uint(w.Slot) >= MaxVCPUs {
		return nil
	}
	if v := vcpus[w.Slot].Load(); v != nil && v.waiter == w {
		return v
	}
	return nil
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
	if v := Of(kick.Current()); v != nil {
		v.poll()
	}
}
