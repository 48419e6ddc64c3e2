// Package qspin provides a queued spinlock in the style of the Linux
// qspinlock: a 32-bit lock word, a pending bit for the first contender and
// an MCS queue of per-waiter nodes for the rest, in three variants:
//
//   - PV (the zero value): the kernel's paravirtualized qspinlock. Queued
//     waiters spin for a threshold and then halt (see package kick), the new
//     lock holder never wakes a halted successor itself but marks the lock
//     SLOW so that the single kick happens at unlock, and running lockers
//     may steal the lock from the queue head until the head has been
//     overtaken for a millisecond (bounded lock stealing, on by default,
//     off with NoStealing).
//   - Native (New(Native())): the bare-metal qspinlock; waiters only spin.
//   - TAS (NewTAS() or New(TAS())): the kernel's virt_spin_lock fallback, an
//     unfair test-and-set lock for hosts without PV support.
//
// A queue lock hands the lock on in FIFO order with each waiter spinning on
// its own cache line, which scales where a ticket lock does not; its PV
// form lets a queued waiter halt without starving the queue, which is why
// Linux replaced PV ticketlocks with PV qspinlocks in 4.2.
//
// The PV variants also restrict concurrency (see pvlock.Policy.Restrict
// and NoRestriction): while a lock is saturated, only a few waiters enter
// its slow path (one goroutine, or one vCPU per other CPU), and the others
// wait outside with no node queued, halted, until a release admits them,
// oldest first and within the restriction's fairness bound. With stealing,
// the one admitted waiter spins for the lock without queueing, as
// sync.Mutex's spinner does, so that the running holder keeps the lock and
// its cache lines; only a waiter that has waited a millisecond queues.
//
// The zero Lock is an unlocked PV lock:
//
//	var mu qspin.Lock
//	mu.Lock()
//	counter++
//	mu.Unlock()
//
// RWLock is the queued reader-writer lock built on Lock, the kernel's
// qrwlock, and a drop-in for sync.RWMutex: readers share it with one
// atomic add, writers take it with one compare-and-swap, and everyone who
// has to wait queues on a Lock of the same variant, so that under
// overcommit queued readers and writers halt and are kicked like the
// waiters of a Lock, and the queue head halts too rather than spin behind
// a preempted reader or writer. Neither side starves the other. It suits
// read-mostly data: a cache, a routing table, a configuration.
//
//	var cfg struct {
//		mu    qspin.RWLock
//		route map[string]string
//	}
//	cfg.mu.RLock()
//	next := cfg.route[dst]
//	cfg.mu.RUnlock()
//
// SpinThreshold and SpinDuration tune how long a PV waiter spins before it
// halts; turning pvlock.Policy.PVSpin off stops every PV lock from halting,
// like the kernel's nopvspin. Lock events are counted per mode in
// lockstat.Stats (see Stats and the event name constants), with the
// kernel's lock_events names.
//
// This package holds the queued-lock protocol, its word layout, nodes and
// hash table only. How a waiter spins, halts and records its halt, the
// options plumbing and the event names are the lock core that qspin
// shares with ticket (internal/lockcore).
//
// # Lock word
//
// Go has no 8- or 16-bit atomics, so this is a port of the kernel's
// whole-word variant (_Q_PENDING_BITS == 1): every change of the word is a
// 32-bit CAS, Or, And or Add, and never a byte store that could clobber a
// concurrent change of another field.
//
//	31                                          9    8    7          0
//	+--------------------------------------------+----+------------+
//	| tail: MCS node id + 1 (0 = queue is empty) | P  | locked     |
//	+--------------------------------------------+----+------------+
//
//	locked  0 free, 1 held, 3 held and SLOW (PV: a halted waiter is
//	        hashed under this lock and the unlocker must kick it)
//	P       pending. Native: the first contender waits here instead of
//	        queueing. PV: the queue head spins and takes the lock at its
//	        next release, so lock stealing is not allowed (a no-steal
//	        lock's head, or a starving one).
//	tail    the last queued waiter's node; node ids are global, so the
//	        tail needs no separate nesting index.
//
// # Transitions
//
// Triples are (tail, pending, locked) as in kernel/locking/qspinlock.c; n is
// our own tail, m another one, * anything.
//
//	from      to        who                               how
//	0,0,0     0,0,1     Lock fast path, TryLock           CAS
//	0,0,1     0,1,1     native: first contender           Or(P)
//	*,1,1     *,1,0     Unlock                            CAS / And
//	0,1,0     0,0,1     native: pending owner takes it    Add(L-P)
//	*,*,*     n,*,*     queueing waiter (xchg_tail)       CAS loop
//	n,0,0     0,0,1     native head, last in queue        CAS
//	m,0,0     m,0,1     native head, others queued        Or(L)
//	n,0,1     0,0,1     PV head, last in queue            CAS
//	*,0,0     *,0,1     PV: lock stealing, a head that    CAS
//	                    competes with stealers, or a
//	                    head that finds the lock free
//	                    when it is about to halt
//	*,0,*     *,1,*     fair PV head starts spinning      Or(P)
//	*,1,0     *,0,1     PV head takes the lock            CAS
//	*,1,*     *,0,*     PV head stops spinning            And(^P)
//	*,0,1     *,0,3     PV head before halting, or the    CAS / Or(S)
//	                    holder whose successor halted
//	*,*,3     *,*,0     PV Unlock, after unhashing        And(^L)
//	*,*,1     *,*,0     Unlock                            CAS / And
//
// The TAS variant uses only the locked field: 0,0,0 <-> 0,0,1.
//
// # PV slow path
//
// The PV waiter follows kernel/locking/qspinlock_paravirt.h:
//
//   - A non-head waiter spins on its node for the threshold, checking every
//     256 polls whether its predecessor is itself halted (then it halts at
//     once: pv_wait_early). To halt it arms its kick.Waiter, sets its node
//     HALTED and re-checks its node (pv_wait_node).
//   - The holder that makes a node queue head sets node.locked and, if the
//     node is HALTED, turns it HASHED, records lock -> node in the hash
//     table and marks the lock SLOW (pv_kick_node): the node is kicked
//     once, when the lock is released, instead of being woken only to
//     spin on a held lock.
//   - The queue head spins for the lock; after the threshold it hashes
//     itself, marks the lock SLOW (or takes it, if it became free) and
//     halts (pv_wait_head_or_lock).
//   - The kernel's head spins with pending set, so that no locker steals
//     the lock from it. On a saturated lock that moves the lock, and its
//     data, from CPU to CPU at every release, and a head that was kicked
//     takes the lock from the running lockers that overtook it while it
//     woke. Here the head of a lock with stealing competes with stealers
//     instead: it spins without pending and, kicked and overtaken, hashes
//     itself anew and halts again, while the running lockers keep the
//     lock in their caches (concurrency restriction, as sync.Mutex's
//     barging does). A head overtaken for a millisecond is starving: it
//     sets pending and, once kicked, spins on with pending set until the
//     lock is its own, as the kernel's head does. The head of a no-steal
//     lock always does.
//   - Unlock of a SLOW lock removes the hash entry, releases the lock,
//     marks the entry removed in the node (so that its head may hash
//     itself again) and kicks exactly the hashed node
//     (__pv_queued_spin_unlock_slowpath).
//   - A locker that finds a queue whose head is not spinning with pending
//     set may take a free lock before queueing, for at most one spin
//     threshold (pv_hybrid_queued_unfair_trylock).
//
// Go's garbage collector makes it memory-safe for an unlocker to touch a
// node (and for a waiter to read its predecessor's node) after the lock
// changed hands: nodes are never freed, and a kick that reaches a node
// whose owner has moved on is only a spurious wake-up, which every wait
// tolerates.
//
// # Nodes and nesting
//
// A waiter needs a node only while it waits: the node is released as soon
// as the lock is taken, so holding lock A while locking lock B uses one
// node, and any depth of nesting is handled. A pinned vCPU (a thread with a
// bound kick.Waiter, see pvlock) uses its own per-vCPU node; a vCPU thread
// runs a single goroutine, which waits for at most one lock at a time.
// Other goroutines take nodes from a lock-free pool of MaxPooledWaiters
// nodes. Should the pool run dry, the extra waiters spin on a trylock
// without a node (the kernel's lock_no_node), yielding the processor
// between polls, and the lock_no_node event counts them.
//
// # Hazards
//
// Comments in the code name the hazard that an ordering or an atomic step
// guards against, with these tags:
//
//   - Lost wakeup, non-head: a queued waiter sets its node HALTED and halts
//     while the holder that makes it queue head misses HALTED, so nobody
//     arranges its kick.
//   - Lost wakeup, head: the queue head hashes itself and halts on a SLOW
//     lock whose unlocker released it without seeing SLOW, or found SLOW
//     before the hash entry, so nobody kicks the head.
//   - Lost wakeup, count word: an RWLock's queue head sets the count
//     word's halted bit H and halts while a release misses H, or finds H
//     before the head is published, so nobody kicks it.
//   - Lost wakeup, arm: a waiter that arms its kick.Waiter after publishing
//     itself erases a kick sent in between, and halts for good.
//   - Lost wakeup, gate: a passive waiter counts itself at the gate after the
//     release that would have admitted it looked there, and nobody is left
//     to admit it.
//   - Double entry: a queue head hashes itself anew while its last entry is
//     still in the hash table, taking a stray kick, a lock that is not SLOW
//     or the mark of an older entry for the removal of this one; the lock
//     gets two entries, and a release leaves one behind.
package qspin
