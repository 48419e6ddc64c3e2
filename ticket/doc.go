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
// word: head in the low 32 bits, tail in the high 32 bits.
//
//	63                      33   32   31                              0
//	+--------------------------+----+---------------------------------+
//	| tail ticket              |flag| head ticket (now serving)       |
//	+--------------------------+----+---------------------------------+
//
// PV tickets step by 2 (INC=2) so the tail's least significant bit is free
// for the slowpath flag; native tickets step by 1 and have no flag.
//
//	operation   word change                         who
//	Lock        tail += INC iff head == tail&^flag  CAS, the fast path
//	            tail += INC (atomic add)            a contended locker the gate admitted
//	TryLock     tail += INC iff head == tail&^flag  CAS
//	halt        flag |= 1 (atomic or)               PV waiter after spinning
//	passive     flag |= 1 (atomic or)               PV waiter outside the lock
//	Unlock      head += INC (atomic add)            holder
//	clear flag  CAS prev+INC -> same &^flag          PV unlocker, only if no one queued
//	                                                and nobody waits outside
//
// When head wraps from 2^32-INC to 0 the add would carry into tail. The
// holder knows its own ticket, so Unlock then adds INC-2^32 instead,
// cancelling the carry: the word is exact across wrap-around. Tail simply
// overflows out of the word.
package ticket
