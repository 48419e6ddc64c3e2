// Package pvlock is the runtime of the pvlock module: it turns goroutines
// into "vCPUs" (goroutines locked to OS threads and pinned with
// sched_setaffinity onto a chosen set of physical CPUs), so that running
// more vCPUs than CPUs overcommits the machine for real and the Linux
// scheduler plays the hypervisor. It also holds the policy shared by the
// locks (Policy: PV on or off, the waiting policy, halt watchdog). The
// locks' statistics are in package lockstat.
//
// A VM of 4 vCPUs on every CPU this process may use, each vCPU running a
// workload until the context ends:
//
//	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 4})
//	if err != nil { ... }
//	var mu ticket.Lock
//	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
//		for ctx.Err() == nil {
//			mu.Lock()
//			// critical section
//			mu.Unlock()
//		}
//		return nil
//	})
//
// Overcommit is expressed as the PV ticketlock work did: k× means k·P vCPUs
// on P physical CPUs (see Overcommit). Several VMs may run at once on the
// same CPUs; each has its own vCPUs and its own locks.
//
// # Systems
//
// vCPUs need Linux: their threads are pinned with sched_setaffinity, their
// halts are futex waits and their steal time (VCPU.Steal) is read from
// their threads' scheduler statistics in /proc. The package builds
// everywhere, but off Linux NewVM, Overcommit, HostCPUs, VM.Run, RunAll
// and VCPU.Repin return an error that wraps errors.ErrUnsupported; the
// policy (Policy, SetPolicy) and CondRelock work on every system, as the
// locks do from ordinary goroutines.
//
// # GOMAXPROCS
//
// A vCPU goroutine needs a Go P to run. If GOMAXPROCS were smaller than the
// number of vCPU threads, the Go scheduler would silently time-slice the
// vCPUs itself and hide the overcommit from Linux. While any VM runs, this
// package raises GOMAXPROCS to at least the number of running vCPUs plus
// two (room for the goroutines that drive and observe the VMs), and puts
// the previous value back when the last VM stops. The pinning of vCPU
// threads, not GOMAXPROCS, is what limits them to the chosen CPUs.
//
// # Threads
//
// A vCPU locks its goroutine to its thread before pinning it and never
// unlocks it: when the workload returns, the goroutine exits while locked
// and the Go runtime terminates the pinned thread, so no pinned thread ever
// goes back to run unrelated goroutines.
//
// # The waiting policy
//
// PV lock waiters on vCPUs decide how to wait from what the runtime knows:
// which vCPUs share a physical CPU and which of them are halted (a
// kick.Domain per CPU, or per CPU set for PinFloat VMs). A waiter spins
// while its CPU has nothing else to run, and gives way after a short,
// per-vCPU adaptive window once a sibling vCPU is runnable. A halting vCPU
// halt-polls while its CPU would otherwise idle (Policy.HaltPoll, KVM's
// halt_poll_ns). A vCPU that kicks a sleeping waiter homed on its own CPU
// yields to it (Policy.DirectedYield). Locks with stealing spin only
// briefly (about a microsecond), as sync.Mutex does, and so do goroutines
// that are not vCPUs, which then park (never halt-poll); a vCPU or
// goroutine that wakes a parked goroutine yields its P to it.
//
// # Cross-vCPU calls and lock-break
//
// The runtime tracks whether each vCPU is running its workload, halted in
// kick (a lock's slow path, or Idle) or offline (VCPU.State). A Shootdown
// uses that to make every vCPU run a handler, say to drop a stale cached
// view: the native call waits for every vCPU, the PV call leaves halted
// ones a flush-on-entry flag and does not wait for them (KVM's paravirtual TLB flush). Running
// vCPUs acknowledge with VCPU.Poll between operations, and lock spin loops
// acknowledge every thousand or so polls as they spin. CondRelock and
// VCPU.CondRelock let the holder of a lock that works through a long batch
// drop and retake it when others wait or the host wants the CPU back (the
// kernel's cond_resched_lock).
package pvlock
