package pvlock

import (
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/lockcore"
	"golang.org/x/sys/cpu"
)

// The vCPU's lifecycle as cross-vCPU calls (shootdown.go) see it: its
// state word, set running when its workload starts (enter) and offline
// when it returns (leave), and halted between the hooks its waiter is
// bound to (haltHook, set by NewVM).

// The per-vCPU state word of cross-vCPU calls (see Shootdown for what
// "running", "halted" and "offline" guarantee).
//
//	bit      set by                         cleared by
//	online   vCPU, entering its workload     vCPU, leaving its workload
//	halted   vCPU, Halting hook              vCPU, Resumed hook
//	pending  initiator, after posting        vCPU, at the start of a drain
//
// The zero word is an offline vCPU with nothing pending.
//
// Every transition is an atomic read-modify-write that returns the old word,
// so the initiator's "post, then set pending" and the vCPU's "leave halt or
// enter the workload" are totally ordered: either the initiator's RMW comes
// first, and the vCPU's RMW returns pending and drains before it returns to
// workload code, or the vCPU's comes first, and the initiator sees it
// running and waits for its acknowledgement (a Poll).
const (
	exOnline  uint32 = 1 << 0
	exHalted  uint32 = 1 << 1
	exPending uint32 = 1 << 2
)

// execState is a vCPU's run state for cross-vCPU calls. The word is read by
// initiators on every poll of their wait loop, so it sits on its own line.
type execState struct {
	_        cpu.CacheLinePad
	word     atomic.Uint32
	draining bool // owned by the vCPU's thread: a drain is in progress
	_        cpu.CacheLinePad
}

// VCPUState is what the runtime knows of a vCPU's execution (see Shootdown
// for what each state guarantees).
type VCPUState uint8

const (
	// VCPUOffline: the vCPU is not running its workload function.
	VCPUOffline VCPUState = iota
	// VCPURunning: the vCPU may be running workload code (on a CPU, or
	// preempted by Linux in the middle of it).
	VCPURunning
	// VCPUHalted: the vCPU is halted in kick (a lock's slow path or Idle).
	VCPUHalted
)

// String returns the state's name.
func (s VCPUState) String() string {
	return lockcore.Label([]string{VCPUOffline: "offline", VCPURunning: "running", VCPUHalted: "halted"}, s, "VCPUState")
}

// State returns v's execution state. It is a snapshot: it may change as
// soon as it is read.
func (v *VCPU) State() VCPUState {
	w := v.exec.word.Load()
	switch {
	case w&exOnline == 0:
		return VCPUOffline
	case w&exHalted != 0:
		return VCPUHalted
	}
	return VCPURunning
}

// haltHook adapts a VCPU to kick.HaltHook without giving VCPU exported
// methods that only the halt path may call.
type haltHook VCPU

// Halting marks the vCPU halted. A request posted before this RMW is served
// now, before the sleep, so its initiator need not kick or skip us.
func (h *haltHook) Halting() {
	v := (*VCPU)(h)
	if v.exec.word.Or(exHalted)&exPending != 0 {
		v.drain()
	}
}

// Resumed marks the vCPU running again and serves any request that was left
// to it while it slept, before the halting lock returns to workload code.
func (h *haltHook) Resumed() {
	v := (*VCPU)(h)
	// RMW, not a store: it returns the pending flag an initiator set after
	// seeing us halted, closing the "skipped, then resumed without the
	// work" race.
	if v.exec.word.And(^exHalted)&exPending != 0 {
		v.drain()
	}
}

// enter marks the vCPU running when its workload starts, serving requests
// posted while it was offline.
func (v *VCPU) enter() {
	v.waiter.Domain().Enter()
	v.brk.reset(v.stealStart.Load())
	if v.exec.word.Or(exOnline)&exPending != 0 {
		v.drain()
	}
}

// leave marks the vCPU offline when its workload has returned.
func (v *VCPU) leave() {
	v.waiter.Domain().Leave()
	v.exec.word.And(^exOnline)
	v.brk.close()
}
