package pvlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
)

// Poll serves the cross-vCPU calls posted to v since its last poll, running
// their handlers on the calling thread. Workloads that share state guarded
// by a Shootdown call it between operations: it is how a running vCPU
// acknowledges a call, and the initiator waits for it. Poll must be called
// on v's own thread (inside the workload function of VM.Run). With nothing
// posted it costs one atomic load.
func (v *VCPU) Poll() {
	if v.exec.word.Load()&exPending != 0 {
		v.drain()
	}
}

// drain runs every posted handler. It loops until the pending flag stays
// clear, so a request posted while a handler runs is served too, and it is
// not re-entered (a handler that breaks the rules and halts is caught up by
// the outer loop).
func (v *VCPU) drain() {
	if v.exec.draining {
		return
	}
	v.exec.draining = true
	defer func() { v.exec.draining = false }()
	for v.exec.word.Load()&exPending != 0 {
		// Clear before reading the requests: a request posted after
		// this point sets the flag again and gets another round.
		v.exec.word.And(^exPending)
		if list := v.vm.calls.list.Load(); list != nil {
			for _, s := range *list {
				s.serve(v)
			}
		}
	}
}

// Idle halts the calling vCPU for up to d, the way an idle guest halts until
// its next timer: the vCPU counts as halted, so PV calls skip it. A kick (a
// native call, or anyone kicking v.Waiter()) ends the halt early, and so,
// rarely, does a stray wake-up (kick.Spurious), as a guest's idle halt ends
// on any interrupt. Idle must be called on v's own thread and panics
// otherwise; d <= 0 returns at once.
func (v *VCPU) Idle(d time.Duration) kick.Result {
	if d <= 0 {
		return kick.TimedOut
	}
	if tid := v.threadID(); tid == 0 || tid != gettid() {
		panic(fmt.Sprintf("pvlock: Idle of vCPU %d of %s called from another thread", v.index, v.vm.name))
	}
	v.waiter.Arm()
	return v.waiter.Sleep(d) // no halt-polling: an idle vCPU expects no kick soon
}

// ShootdownMode says how a cross-vCPU call treats vCPUs that are not running.
type ShootdownMode uint8

const (
	// ShootdownPV does not wait for halted vCPUs: it leaves them the
	// request, which they serve when they resume, before returning to
	// workload code (the flush on entry of KVM's PV TLB flush).
	ShootdownPV ShootdownMode = iota
	// ShootdownNative waits for every online target, kicking halted ones
	// awake so that they serve the request (an IPI to an idle CPU).
	ShootdownNative
)

// String returns "pv" or "native".
func (m ShootdownMode) String() string {
	return lockcore.Label([]string{ShootdownPV: "pv", ShootdownNative: "native"}, m, "ShootdownMode")
}

// Shootdown is a cross-vCPU call on the vCPUs of one VM (after the TLB
// shootdowns of KVM's PV TLB flush): Call asks target vCPUs to run the handler, for
// example to drop a cached copy of shared state, and returns once each of
// them has run it or, in PV mode, is halted and will run it before it next
// runs workload code (flush on entry).
//
// # What "not running" means
//
// The runtime keeps one state word per vCPU (VCPU.State). A vCPU is known
// not to be running workload code when it is
//
//   - halted: its thread is inside kick.Waiter.Halt, between the waiter's
//     Halting and Resumed hooks, asleep (in FUTEX_WAIT, or parked in a
//     pvlock_portable build) or on its way in or out (lock slow paths and
//     Idle halt there); or
//   - offline: the workload function of VM.Run is not running on it (the VM
//     is not running, or the vCPU has not entered it yet or has left it).
//
// Both transitions back to running happen on the vCPU's own thread, as an
// atomic read-modify-write of the state word that also returns the pending
// flag, and the vCPU runs the handler before it goes on; so nothing can run
// workload code between "seen not running" and the handler.
//
// A vCPU that Linux preempted in the middle of workload code is running as
// far as the runtime knows, and both modes wait for it. User space cannot
// skip it safely: when Linux resumes the thread, it continues the workload
// where it stopped, and nothing runs on its behalf first. The kernel's PV
// flush can skip preempted vCPUs because the host runs the flush before the
// next VM entry; a Go program has no such hook without kernel help
// (restartable sequences only restart short assembly sections). So here the
// PV call saves the wait for, and the wake-up of, halted vCPUs only, and
// both modes skip offline ones.
//
// # Handlers
//
// Requests coalesce, as TLB flushes do: one run of the handler serves every
// call posted to that vCPU before the run started. So the handler should
// bring the vCPU up to date (re-read shared state, drop a cache) rather
// than apply one specific change.
//
// The handler runs on the target's own thread like an interrupt handler: at
// a Poll, while the vCPU spins for a lock (lock spin loops poll), when it
// halts or resumes inside a lock's slow path, or when it enters its
// workload. It must be short, must not block, and must not
// take locks that can halt, call Poll, Idle or Call.
//
//	sd, _ := pvlock.NewShootdown(vm, pvlock.ShootdownPV, func(v *pvlock.VCPU) {
//		cached[v.Index()] = epoch.Load() // drop the stale view
//	})
//	// on a vCPU, after changing the shared state:
//	epoch.Add(1)
//	sd.Call(ctx, v, nil) // every vCPU now sees the new epoch before its next operation
type Shootdown struct {
	vm      *VM
	mode    ShootdownMode
	handler func(v *VCPU)
	gen     atomic.Uint64 // last generation posted
	closed  atomic.Bool
	slots   []callSlot // per vCPU index
}

// callSlot is one vCPU's view of a Shootdown. req is raised by initiators;
// done is written only by the vCPU.
type callSlot struct {
	req  atomic.Uint64 // highest generation posted to the vCPU
	done atomic.Uint64 // generation its last handler run covered
	_    [128 - 16]byte
}

// callRegistry lists a VM's open Shootdowns for the drain path: a
// copy-on-write slice, read with one atomic load.
type callRegistry struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*Shootdown]
}

// NewShootdown creates a cross-vCPU call on the vCPUs of vm. Close it when
// it is no longer needed.
func NewShootdown(vm *VM, mode ShootdownMode, handler func(v *VCPU)) (*Shootdown, error) {
	if vm == nil {
		return nil, fmt.Errorf("pvlock: NewShootdown: nil VM")
	}
	if handler == nil {
		return nil, fmt.Errorf("pvlock: NewShootdown on %s: nil handler", vm.name)
	}
	if mode != ShootdownPV && mode != ShootdownNative {
		return nil, fmt.Errorf("pvlock: NewShootdown on %s: unknown mode %d", vm.name, int(mode))
	}
	s := &Shootdown{vm: vm, mode: mode, handler: handler, slots: make([]callSlot, len(vm.vcpus))}
	r := &vm.calls
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []*Shootdown
	if old := r.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, s)
	r.list.Store(&list)
	return s, nil
}

// Close unregisters the Shootdown: later calls fail, and requests still
// posted to halted or offline vCPUs are dropped.
func (s *Shootdown) Close() {
	if s.closed.Swap(true) {
		return
	}
	r := &s.vm.calls
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []*Shootdown
	for _, o := range *r.list.Load() {
		if o != s {
			list = append(list, o)
		}
	}
	r.list.Store(&list)
}

// serve runs the handler on v if a generation newer than its last run was
// posted. Only v's thread calls it.
func (s *Shootdown) serve(v *VCPU) {
	sl := &s.slots[v.index]
	g := sl.req.Load()
	if g == sl.done.Load() {
		return
	}
	s.handler(v)
	sl.done.Store(g)
}

// CallStats says how a Call treated its targets.
type CallStats struct {
	// Acked targets ran the handler while the initiator waited (the
	// initiator itself and kicked targets included).
	Acked int
	// Kicked targets were halted and were woken to run it (native).
	Kicked int
	// Deferred targets were halted and will run it when they resume (PV).
	Deferred int
	// Offline targets were outside their workload and will run it when
	// they next enter it.
	Offline int
}

// Call asks targets (nil: every vCPU of the VM) to run the handler and
// waits until each has run it, is offline, or, in PV mode, is halted. When
// Call returns nil, no target runs workload code again before it has run
// the handler after this call began.
//
// self is the calling vCPU, or nil if the caller is not a vCPU of this VM.
// If self is a target, its handler runs at once on the caller; while it
// waits, Call serves calls posted to self, so two vCPUs calling each other
// cannot deadlock. self must be the calling thread's vCPU.
//
// Running targets acknowledge at their next Poll (or halt). A target that
// never polls, for example one spinning on a native lock the caller holds,
// is waited for until ctx ends; Call then returns ctx's error, and the
// request stays posted for the target's next poll.
func (s *Shootdown) Call(ctx context.Context, self *VCPU, targets []*VCPU) (CallStats, error) {
	var st CallStats
	if s.closed.Load() {
		return st, fmt.Errorf("pvlock: call on a closed shootdown of %s", s.vm.name)
	}
	if self != nil {
		if self.vm != s.vm {
			return st, fmt.Errorf("pvlock: shootdown of %s called by vCPU %d of %s", s.vm.name, self.index, self.vm.name)
		}
		if tid := self.threadID(); tid == 0 || tid != gettid() {
			return st, fmt.Errorf("pvlock: shootdown of %s: self (vCPU %d) is not the calling thread", s.vm.name, self.index)
		}
	}
	if targets == nil {
		targets = s.vm.vcpus
	}
	for _, t := range targets {
		if t == nil || t.vm != s.vm {
			return st, fmt.Errorf("pvlock: shootdown of %s: target is not a vCPU of this VM", s.vm.name)
		}
	}
	g := s.gen.Add(1)
	wait := make([]waitee, 0, len(targets))
	selfTarget := false
	for _, t := range targets {
		s.post(t, g)
		if t == self {
			selfTarget = true
			continue
		}
		wait = append(wait, waitee{v: t})
	}
	if selfTarget {
		self.drain()
		st.Acked++
	}
	for round := 0; len(wait) > 0; round++ {
		wait = s.sweep(wait, g, &st)
		if len(wait) == 0 {
			break
		}
		if self != nil {
			self.Poll() // serve calls aimed at us while we wait
		}
		if round&63 == 63 {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("pvlock: shootdown of %s: %d vCPUs did not acknowledge: %w", s.vm.name, len(wait), err)
			}
		}
		relax.Pause(1)
	}
	return st, nil
}

// post publishes generation g to t and raises t's pending flag.
func (s *Shootdown) post(t *VCPU, g uint64) {
	sl := &s.slots[t.index]
	for {
		old := sl.req.Load()
		if old >= g || sl.req.CompareAndSwap(old, g) {
			break
		}
	}
	// Publish the request before the flag: whoever clears the flag reads
	// req afterwards and finds g (or a later generation).
	t.exec.word.Or(exPending)
}

// waitee is a target the initiator still waits for.
type waitee struct {
	v      *VCPU
	kicked bool // woken once by this call already (native)
}

// sweep checks each target once and returns those still to be waited for.
func (s *Shootdown) sweep(wait []waitee, g uint64, st *CallStats) []waitee {
	left := wait[:0]
	for _, w := range wait {
		t := w.v
		if s.slots[t.index].done.Load() >= g {
			st.Acked++
			continue
		}
		// This load follows our pending RMW: a vCPU seen not running
		// has its way back to workload code still ahead, and that way
		// passes through an RMW that returns our flag.
		word := t.exec.word.Load()
		// A target that served the call and then left or halted is
		// acked, not skipped: re-read done after the word, since done
		// is stored before the RMW that clears exOnline or sets exHalted.
		if word&(exOnline|exHalted) != exOnline && s.slots[t.index].done.Load() >= g {
			st.Acked++
			continue
		}
		switch {
		case word&exOnline == 0:
			st.Offline++
			continue
		case word&exHalted != 0 && s.mode == ShootdownPV:
			st.Deferred++
			continue
		case word&exHalted != 0 && !w.kicked:
			// One kick is enough: the halt it ends returns through
			// Resumed, which finds our flag and serves the request.
			w.kicked = true
			if t.waiter.Kick() {
				st.Kicked++
			}
		}
		left = append(left, w)
	}
	return left
}
