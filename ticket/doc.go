// Package ticket provides a FIFO ticket spinlock in two variants: native
// (pure spinning) and paravirtualized (PV), after the Linux PV ticketlocks.
//
// A ticket lock hands the lock to waiters strictly in arrival order. That
// fairness is a disaster when waiters are time-sliced rather than running
// at once: if the holder of the next ticket is preempted, everyone queued
// behind it spins away whole time slices. The PV variant keeps the native
// fast path (one atomic add to take a ticket, one to release) and adds two
// slow-path hooks: a waiter that has spun for a threshold halts and marks
// the lock "slowpath"; an unlocker that sees the mark kicks exactly the
// waiter holding the next ticket.
//
// A PV lock also restricts concurrency (see pvlock.Policy.Restrict and
// NoRestriction): while it is saturated, only a few waiters take a ticket
// (one goroutine, or one vCPU per other CPU), and the others wait outside
// without one, halted, until a release admits them, oldest first and
// within the restriction's fairness bound. The ticket queue then holds only
// waiters that run, so a hand-off does not wait for a wake-up.
//
// The zero Lock is an unlocked PV lock:
//
//	var mu ticket.Lock
//	mu.Lock()
//	counter++
//	mu.Unlock()
//
// New(Native()) gives the native variant; SpinThreshold and SpinDuration
// tune how long a PV waiter spins before halting. Turning
// pvlock.Policy.PVSpin off stops every PV lock from halting, like the
// kernel's nopvspin. Lock events are counted per mode in lockstat.Stats
// (see Stats and the event name constants), with the names of the kernel's
// PV ticketlock debugfs counters.
//
// This package holds the ticket protocol and its word layout only. How a
// waiter spins, halts and records its halt, the kick table key, the
// options plumbing and the event names are the lock core that ticket
// shares with qspin (internal/lockcore).
//
// # Lock word
//
// Go has no 16-bit atomics, so the head and tail tickets share one 64-bit
// word, head in the low half and tail in the high half. PV tickets step
// by 2, so that the tail's least significant bit is free for the slowpath
// flag; native tickets step by 1 and have no flag. The layout, the
// constants and the operations on the word are described with the
// constants, in lock.go.
//
// # Hazards
//
// Comments in the code name the hazard that an ordering or an atomic step
// guards against, with these tags:
//
//   - Lost wakeup, flag: a waiter sets the slowpath flag and halts while the
//     releasing unlocker misses the flag, so nobody kicks the waiter.
//   - Lost wakeup, arm: a waiter that arms its kick.Waiter after publishing
//     itself erases a kick sent in between, and halts for good.
//   - Lost wakeup, gate: a passive waiter counts itself at the gate after the
//     release that would have admitted it looked there, or its mark is
//     erased with the flag, and nobody is left to admit it.
//   - Misrouted kick: a waiter left in the kick table after its halt ended
//     (a panicking halt hook included) takes a later kick meant for another
//     waiter, which sleeps on, and a reused one is linked in two buckets.
//   - Stale hint: the waking hint outlives the wake-up of the kicked holder,
//     and later arrivals halt at once behind a holder that runs.
//   - Erased flag: a blind clear of the slowpath flag erases a flag that a
//     new waiter has just set, and that waiter halts with nobody to kick it.
//   - Head wrap: a head that wraps from 2^32-inc to 0 carries into the tail,
//     which gains a ticket nobody holds or a flag nobody set.
package ticket
