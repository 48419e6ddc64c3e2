// Package kick is pvlock's halt/kick layer: the user-space analogue of a
// paravirtualized guest halting a vCPU and the host kicking it awake.
//
// A Waiter is one parking slot. The waiting side arms it, publishes it where
// a kicker can find it, re-checks its condition and then halts; the kicking
// side stores a sticky token and wakes the waiter only if it is asleep:
//
//	w := kick.Get()            // this thread's vCPU waiter, or a pooled one
//	defer kick.Put(w)
//	w.Arm()                    // before publishing: no old token survives
//	publish(w)                 // e.g. table.Publish(w, key, tag)
//	if !conditionHolds() {
//		w.Halt(timeout)        // returns at once if already kicked
//	}
//
//	// elsewhere: w.Kick()     // sticky: a kick before the halt is not lost
//
// Two backends implement the sleep. A Waiter bound to a pinned vCPU thread
// (see Bind) sleeps in FUTEX_WAIT_PRIVATE on its own 32-bit word and is woken
// with FUTEX_WAKE_PRIVATE, so the thread really leaves the CPU, as a halted
// vCPU does. Any other goroutine gets a pooled Waiter that parks the
// goroutine on a channel instead, which costs no thread switch. Get chooses
// between them automatically, so the locks built on this package work from
// any goroutine.
//
// Futexes are Linux's. Off Linux only the Park backend exists:
// NewWaiter(Futex) returns a Park waiter, and every halt parks its
// goroutine (a goroutine locked to its thread blocks the thread with it).
// Bind then identifies the calling goroutine by its address (internal/curg,
// on amd64 and arm64) and reports errors.ErrUnsupported where that cannot
// be read. Building with the pvlock_portable tag selects this portable,
// park-only code on Linux too, so that its tests exercise the fallback.
//
// A Waiter with a Domain (a vCPU's) halt-polls before it sleeps, as KVM's
// halt_poll_ns does: it polls its own word for an adaptive window, but only
// while no other waiter homed on its CPUs is runnable, so that polling
// never takes a CPU that someone else wants (see SetHaltPoll and Domain).
//
// Table maps (lock, tag) keys to published waiters so that an unlocker can
// kick exactly the waiter that holds the next ticket, or the queue head that
// hashed itself, instead of broadcasting.
package kick
