/*
 * qspin.pml -- the PV queued spinlock of package qspin (qspin/pv.go,
 * qspin/slowpath.go, qspin/lock.go) with its halt/kick layer
 * (kick/waiter.go) and, optionally, the concurrency restriction in front
 * of its slow path, step by step as the Go code does it. It follows the
 * Linux qspinlock_paravirt.h protocol as ported: the hash is written before
 * SLOW, a halt is arm / re-check / halt with a sticky token that Arm
 * clears, and lock stealing is bounded. The queue head of this lock (with
 * stealing) competes with stealers until it is starving: until then it
 * spins without pending, and once kicked and overtaken it hashes itself
 * anew when the unlocker has marked its entry gone; a starving head sets
 * pending and, once kicked, waits again with pending set.
 *
 * NCPU goroutines each loop: Lock, critical section, Unlock -- ITER times,
 * or for ever when ITER is 0. Each goroutine has one queue node and the
 * node's waiter (a vCPU's node, or a pooled node while its goroutine
 * holds it). Every access to shared state is its own atomic step, in
 * program order, and steps interleave sequentially consistently, as Go's
 * sync/atomic operations do. A load followed by a CAS of the word it
 * loaded is one step (a failed CAS retries with a fresh load, which is
 * another interleaving of the same step). Each step is marked
 * "step: <name>"; the same names mark the Go code, in the same order, and
 * TestModelSteps checks that the two lists agree.
 *
 *   lock word    locked (0, LOCKED = 1, SLOW = 3), pending, qtail
 *                (0 = no tail, else the goroutine number + 1)
 *   qnode        nlocked[], nnext[] (0 = nil, else goroutine + 1),
 *                nstate[] (RUNNING, HALTED, HASHED)
 *   hash table   with one lock it reduces to the lock's entry: hnode
 *                (0 = none, else goroutine + 1)
 *   entry marks  the node's hashSeq and unhashed counters, reduced to what
 *                the code compares: ngone[k] is "unhashed == hashSeq"
 *                (both start at 0, so it starts set; a bump clears it), and an unlocker's read of hashSeq is
 *                ureadn[u] (node + 1) with useq[u] "still equal to hashSeq"
 *                (a bump of that node clears it). A mark with a stale read
 *                changes nothing, as the Go max-store of an older number
 *                never makes the two counters equal. entryGone's two loads
 *                are one step: hashSeq only grows, and a mark only ever
 *                holds a number read after its entry was removed.
 *   kick.Waiter  wstate[] (IDLE, SLEEPING, KICKED): the futex word, whose
 *                KICKED is the sticky token
 *
 * The model has no spurious wake-ups and no halt timeout: a waiter leaves
 * a halt only because it was kicked, so the liveness check shows that
 * kicks alone suffice (the Go timeout is a safety net). PV spinning is on
 * (pvlock.PVSpin). Spin loops poll and, after any failed poll, may stop:
 * that covers every spin threshold and the pvWaitNode wait-early check.
 * Lock stealing polls at most STEAL times (the Go bound is the spin
 * threshold). The head's starvation clock is a free choice at each
 * head-starving step: it may turn fair at any round, or never. Left out:
 * the native and TAS variants, lockNoNode (the node pool exhausted) and
 * pvlock's cross-vCPU polls.
 *
 * A kick is sent to the node the unlocker found in the hash entry, after
 * the release: its goroutine may have taken the lock and moved on by then,
 * and the token waits in its waiter (a stray kick) until the next Arm.
 *
 * Unlock: the inlined fast path releases a word that is LOCKED and
 * nothing else with one CAS (unlock-fast), else unlockPV releases it;
 * after the release, and only then, one load of the gate's state
 * (unlock-gate-check) and, if passive waiters wait, Gate.Released
 * (unlock-gate). Every batch-th release takes the outlined path before
 * its CAS, whose release() tries the same CAS: the model does not tell
 * the two apart.
 *
 * Concurrency restriction (lockcore.Gate, internal/lockcore/gate.go):
 * with CAP < NCPU, a locker that fails the fast CAS passes the gate.
 * With fewer than CAP active
 * waiters it counts itself active and spins as the admitted spinner
 * (contend): it takes a free word that is not pending (contend-trylock),
 * queues if a fair head set pending or once it has waited for starveAfter
 * (a free choice), and after its spin threshold (a free choice after any
 * failed poll) turns passive again (contend-demote). A passive waiter
 * re-checks the lock (Gated.Free), admits the oldest passive waiter
 * itself if the lock is free, and waits until a passive waiter is
 * admitted; it then clears W and counts itself active. Unless an
 * admitted waiter is on its way in (W), a release admits the oldest if no
 * active waiter is left (drained) or by the fairness bound (a free
 * choice). The gate is reduced to its state word (gact, gw, gpas) and one
 * admission bit (gadm) that any passive waiter may take: gate.pml checks
 * the gate's own steps, its FIFO tickets and the halt and kick of a
 * passive waiter. Leave, deferred in lockPV, comes with the entry to the
 * critical section. With CAP = NCPU, the default,
 * there is no restriction: Enter and Leave change nothing the model can
 * tell (nothing reads the active count while nobody is passive), so the
 * model leaves them out, and the lock steals as before.
 *
 * Properties: the assertions (mutual exclusion; a lock has at most one
 * hash entry; the unlocker that sees SLOW finds the entry; the word is
 * LOCKED at the claim and LOCKED or SLOW at Unlock; a halt ends only with
 * a kick), no invalid end state, and ltl alldone below, under weak
 * fairness: with ITER rounds each, every goroutine finishes. Bounding the
 * rounds bounds stealing, so a goroutine halted for ever is a goroutine
 * that never finishes, whatever the others do. models_test.go checks the
 * assertions with ITER 0 (every goroutine locks for ever) and alldone,
 * assertions included, with ITER 1 and ITER 2; and, restricted (CAP = 1),
 * the assertions with ITER 0 and alldone with ITER 1.
 *
 * Mutants (spin -DMUT_xxx), each breaking one step, must fail alldone: the
 * first twelve with ITER 1; the last four need a node's entry of an
 * earlier wait to go wrong, and fail with ITER 2, on the assertion of one
 * hash entry per lock:
 *   NOKICK                unlock-kick: the unlocker never kicks.
 *   ARM_AFTER_RECHECK     node-arm, head-arm: arm after the re-check, erasing
 *                         a kick that came in between.
 *   NODE_RECHECK_FIRST    node-halted: the node loads locked before it
 *                         stores HALTED (no barrier between them).
 *   KICKNODE_FIRST        hand-head: the holder tries HALTED -> HASHED
 *                         before it stores next.locked.
 *   HEAD_SLOW_FIRST       head-hash: the head marks SLOW before hashing.
 *   SLOW_BLIND            head-lock-or-slow: a blind Or of SLOW, without
 *                         taking a lock that is free.
 *   KEEP_HASH             head-unhash: a head that took the free lock in
 *                         lockOrMarkSlow leaves its entry in the table.
 *   DOUBLEHASH            head-hashed: the head ignores that pvKickNode
 *                         hashed it and hashes itself again.
 *   NO_HEAD_RECHECK       head-recheck: the head halts without re-checking
 *                         SLOW after arming.
 *   UNLOCK_BLIND          unlock-cas: the release of a LOCKED word is a
 *                         load and a blind store, not a CAS.
 *   RELEASE_BEFORE_UNHASH unlock-unhash: unhash after the release.
 *   KICK_BEFORE_RELEASE   unlock-release: kick before the release.
 *   MARK_BEFORE_RELEASE   unlock-mark: the unlocker marks the entry gone
 *                         before it releases the lock.
 *   SEQ_AFTER_RELEASE     unlock-seq: the unlocker reads hashSeq after the
 *                         release, when the node may have a newer entry.
 *   KICKNODE_NO_SEQ       kicknode-seq: pvKickNode hashes next without
 *                         bumping hashSeq.
 *   KICKNODE_SEQ_LATE     kicknode-seq: pvKickNode bumps hashSeq after the
 *                         CAS that tells next it is hashed.
 * With CAP = 1, and failing alldone with ITER 1:
 *   GATE_FIRST            unlock-gate-check: the release loads the gate's
 *                         state before it releases the lock: a waiter that
 *                         counts itself passive in between finds the lock
 *                         held, and the release never admits it.
 * One reordering is harmless and must verify (spin -DALT_xxx):
 *   KICKNODE_SLOW_FIRST   pvKickNode marks SLOW before hashing: the holder
 *                         itself unlocks later, and nobody else acts on
 *                         SLOW in between.
 */

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* lock/unlock rounds per goroutine; 0 = for ever */
#endif
#ifndef STEAL
#define STEAL 2 /* polls of one lock-stealing attempt */
#endif
#ifndef CAP
#define CAP NCPU /* the cap of active waiters; NCPU: no restriction */
#endif

#define LOCKED 1 /* lockedVal */
#define SLOW   3 /* slowVal */

#define RUNNING 0 /* stateRunning */
#define HALTED  1 /* stateHalted: halted in pvWaitNode */
#define HASHED  2 /* stateHashed: hashed, the unlocker will kick it */

#define IDLE     0
#define SLEEPING 1
#define KICKED   2

/* the lock word */
byte locked;
bit pending;
byte qtail;

/* the queue nodes */
bit nlocked[NCPU];
byte nnext[NCPU];
byte nstate[NCPU];

/* the hash entry of the lock */
byte hnode;

/* the entry marks */
bit ngone[NCPU] = 1;
byte ureadn[NCPU];
bit useq[NCPU];

/* the waiters */
byte wstate[NCPU];

/* lockcore.Gate, reduced to what the lock sees of it (gate.pml models
 * it step by step, with the tickets, halt and kick of a passive waiter):
 * the fields of its state word, gact (active waiters), gw (W: an admitted
 * waiter is on its way in) and gpas (passive waiters), and gadm, an
 * admission that no passive waiter has seen yet. Any passive waiter may
 * take it: the model drops the FIFO order of the passive tickets. */
byte gact;
bit gw;
byte gpas;
bit gadm;

/* observers */
byte incs;     /* goroutines in the critical section */
byte finished; /* goroutines that did all their rounds */

/* ---- kick/waiter.go ---- */

/* Waiter.Arm: clear any old token. */
inline waiter_arm() {
	wstate[me] = IDLE /* step: waiter-arm */
}

/* Waiter.Halt with the futex backend. CAS idle -> sleeping fails only if
 * the token is there; FUTEX_WAIT(&state, sleeping) sleeps only while the
 * word is still sleeping, and a kicker swaps in the token before it wakes
 * the sleeper, so the futex call and the wake-up act as one wait for the
 * token (the ticket model's NOEXPECT mutant splits them). Leaving
 * consumes the token, on the early path as after a sleep. */
inline waiter_halt() {
	atomic { /* step: waiter-halt-cas */
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING
		:: else -> skip /* the token is already here */
		fi
	}
	atomic { /* step: waiter-sleep */
		wstate[me] == KICKED ->
		wstate[me] = IDLE
	}
}

/* Waiter.Kick: swap in the token (the FUTEX_WAKE of a sleeper is the
 * wait above ending). */
inline waiter_kick(k) {
	wstate[k] = KICKED /* step: waiter-kick */
}

/* ---- qspin/pv.go ---- */

/* hash(l, n): the lock takes one entry; the table must never hold two
 * for one lock. */
inline hash(k) {
	atomic { assert(hnode == 0); hnode = k + 1 }
}

/* hashSeq.Add(1) of node k: a new entry number, which no read so far
 * equals. */
inline bump(k) {
	atomic {
		ngone[k] = 0;
		for (i : 0 .. NCPU - 1) {
			if
			:: ureadn[i] == k + 1 -> useq[i] = 0
			:: else -> skip
			fi
		}
		i = 0
	}
}

/* pvWaitNode: a queued node spins on locked, then halts until its
 * predecessor makes it queue head. */
inline pv_wait_node() {
	do
	::
		do
		:: nlocked[me] -> goto waited /* step: node-spin */
		:: else ->
			if
			:: skip  /* poll again */
			:: break /* threshold, or a halted predecessor */
			fi
		od;
#ifndef MUT_ARM_AFTER_RECHECK
		waiter_arm(); /* step: node-arm */
#endif
#ifdef MUT_NODE_RECHECK_FIRST
		o = nlocked[me];
		nstate[me] = HALTED; /* step: node-halted */
#else
		nstate[me] = HALTED; /* step: node-halted */
		o = nlocked[me];
#endif
		if /* step: node-recheck */
		:: o == 0 ->
			if
			:: nstate[me] == HALTED -> /* step: node-state-check */
#ifdef MUT_ARM_AFTER_RECHECK
				waiter_arm(); /* step: node-arm */
#endif
				waiter_halt()
			:: else -> skip
			fi
		:: else -> skip
		fi;
		o = 0;
		atomic { /* step: node-running */
			if
			:: nstate[me] == HALTED -> nstate[me] = RUNNING
			:: else -> skip /* hashed: the unlocker will kick us */
			fi
		}
	od;
waited:
	skip
}

/* pvKickNode(next), by the new holder right after next.locked = 1. */
inline pv_kick_node(k) {
	if /* step: kicknode-check */
	:: nstate[k] != HALTED -> goto kicked
	:: else -> skip
	fi;
#ifndef MUT_KICKNODE_NO_SEQ
#ifndef MUT_KICKNODE_SEQ_LATE
	bump(k); /* step: kicknode-seq */
#endif
#endif
	atomic { /* step: kicknode-cas */
		if
		:: nstate[k] == HALTED -> nstate[k] = HASHED; o = 1
		:: else -> o = 0 /* running: it will see locked itself */
		fi
	}
#ifdef MUT_KICKNODE_SEQ_LATE
	if
	:: o -> bump(k) /* step: kicknode-seq */
	:: else -> skip
	fi;
#endif
	if
	:: o ->
		o = 0;
#ifdef ALT_KICKNODE_SLOW_FIRST
		locked = SLOW;
		hash(k);
#else
		hash(k); /* step: kicknode-hash */
		/* we hold the lock: Or turns LOCKED into SLOW */
		locked = SLOW /* step: kicknode-slow */
#endif
	:: else -> skip
	fi;
kicked:
	skip
}

/* pvWaitHeadOrLock: the queue head spins for the lock, without pending
 * until it is starving; it hashes itself, marks the lock SLOW and halts;
 * it returns with the lock held. */
inline pv_wait_head_or_lock() {
#ifdef MUT_DOUBLEHASH
	hashed = 0;
#else
	hashed = (nstate[me] == HASHED); /* step: head-hashed */
#endif
	do
	::
		nstate[me] = RUNNING; /* step: head-running */
		if /* step: head-starving */
		:: !fair -> fair = 1
		:: true -> skip
		fi;
		if
		:: fair -> pending = 1 /* step: head-pending */
		:: else -> skip
		fi;
spinhead:
		do
		:: atomic { /* step: head-trylock */
			locked == 0 && (fair || pending == 0) ->
			assert(pending == fair);
			locked = LOCKED; pending = 0
		   }
		   goto gotlock
		:: locked != 0 ->
			if
			:: skip  /* poll again */
			:: break /* threshold */
			fi
		od;
		/* hashed, and the lock is not SLOW: our entry is gone (or
		 * pvKickNode has not marked SLOW yet) */
		if /* step: head-wait-again */
		:: hashed && locked != SLOW ->
			if /* step: head-unhashed */
			:: !fair && ngone[me] -> hashed = 0
			:: else -> goto spinhead
			fi
		:: else -> skip
		fi;
		if
		:: fair -> pending = 0 /* step: head-clear-pending */
		:: else -> skip
		fi;
#ifndef MUT_ARM_AFTER_RECHECK
		waiter_arm(); /* step: head-arm */
#endif
		if
		:: !hashed ->
			hashed = 1;
#ifdef MUT_HEAD_SLOW_FIRST
			atomic {
				if
				:: locked == 0 -> locked = LOCKED; o = 1
				:: else -> locked = SLOW; o = 0
				fi
			}
			hash(me); /* step: head-hash */
#elif defined(MUT_SLOW_BLIND)
			hash(me); /* step: head-hash */
			locked = SLOW; o = 0;
#else
			hash(me); /* step: head-hash */
			/* lockOrMarkSlow: take a free lock, else mark it SLOW */
			atomic { /* step: head-lock-or-slow */
				if
				:: locked == 0 -> locked = LOCKED; o = 1
				:: else -> locked = SLOW; o = 0
				fi
			}
#endif
			if
			:: o ->
				/* the lock is ours: LOCKED, not SLOW, while our
				 * entry still exists */
				o = 0;
#ifndef MUT_KEEP_HASH
				hnode = 0; /* step: head-unhash */
#endif
				goto gotlock
			:: else -> skip
			fi
		:: else -> skip
		fi;
		nstate[me] = HASHED; /* step: head-mark-hashed */
#ifdef MUT_NO_HEAD_RECHECK
		waiter_halt()
#else
		if /* step: head-recheck */
		:: locked == SLOW ->
#ifdef MUT_ARM_AFTER_RECHECK
			waiter_arm(); /* step: head-arm */
#endif
			waiter_halt()
		:: else -> skip
		fi
#endif
	od;
gotlock:
	hashed = 0;
	fair = 0
}

/* unlockPV: the word was not exactly LOCKED. */
inline unlock_pv() {
#ifdef MUT_UNLOCK_BLIND
	o = locked;
	if
	:: o == LOCKED -> o = 0; locked = 0; goto unlocked /* step: unlock-cas */
	:: else -> o = 0; assert(locked == SLOW)
	fi;
#else
	atomic { /* step: unlock-cas */
		if
		:: locked == LOCKED -> locked = 0; goto unlocked
		:: else -> assert(locked == SLOW) /* else: unlock of unlocked */
		fi
	}
#endif
	/* unlockSlow */
#if defined(MUT_RELEASE_BEFORE_UNHASH)
	locked = 0;
#endif
	atomic { /* step: unlock-unhash */
		assert(hnode != 0); /* SLOW without an entry */
		n = hnode - 1;
		hnode = 0
	}
#ifndef MUT_SEQ_AFTER_RELEASE
	atomic { ureadn[me] = n + 1; useq[me] = 1 } /* step: unlock-seq */
#endif
#ifdef MUT_MARK_BEFORE_RELEASE
	atomic {
		if
		:: useq[me] -> ngone[ureadn[me] - 1] = 1
		:: else -> skip
		fi;
		ureadn[me] = 0; useq[me] = 0
	}
#endif
#ifdef MUT_KICK_BEFORE_RELEASE
	waiter_kick(n);
#endif
#ifndef MUT_RELEASE_BEFORE_UNHASH
	locked = 0; /* step: unlock-release */
#endif
#ifdef MUT_SEQ_AFTER_RELEASE
	atomic { ureadn[me] = n + 1; useq[me] = 1 } /* step: unlock-seq */
#endif
#ifndef MUT_MARK_BEFORE_RELEASE
	/* markUnhashed: the max-store of the number read at unlock-seq makes
	 * the node's counters equal only if no hash came since the read */
	atomic { /* step: unlock-mark */
		if
		:: useq[me] -> ngone[ureadn[me] - 1] = 1
		:: else -> skip
		fi;
		ureadn[me] = 0; useq[me] = 0
	}
#endif
#ifndef MUT_NOKICK
#ifndef MUT_KICK_BEFORE_RELEASE
	waiter_kick(n); /* step: unlock-kick */
#endif
#endif
	n = 0
}

/* ---- qspin/slowpath.go ---- */

/* contend: the admitted waiter of a restricted lock spins for a free,
 * not pending word without queueing; it queues if a fair head set
 * pending, or once it has waited for starveAfter (a free choice); after
 * the spin threshold (a free choice after any failed poll) it waits
 * outside the gate again. */
inline contend() {
	do
	:: atomic { /* step: contend-trylock */
		if
		:: locked == 0 && pending == 0 -> locked = LOCKED; goto cs
		:: pending -> break
		:: else ->
			if
			:: skip  /* poll again */
			:: break /* threshold */
			fi
		fi
	   }
	od;
	atomic {
		if
		:: pending -> goto queued
		:: else ->
			if
			:: goto queued /* starving */
			:: skip
			fi
		fi
	}
	atomic { gact--; gpas++ } /* step: contend-demote */
	goto passive
}

/* steal: bounded lock stealing while the head is not spinning. */
inline steal() {
	do
	:: atomic { /* step: steal */
		if
		:: locked == 0 && pending == 0 -> locked = LOCKED; sc = 0; goto cs
		:: else ->
			if
			:: qtail == 0 || pending -> sc = 0; break
			:: else ->
				sc++;
				if
				:: sc == STEAL -> sc = 0; break
				:: else -> skip
				fi
			fi
		fi
	   }
	od
}

/* queue: the MCS part of the slow path. */
inline queue() {
	/* a fresh node: private until the tail names it */
	atomic { /* step: node-trylock */
		nlocked[me] = 0; nnext[me] = 0; nstate[me] = RUNNING;
		if
		:: locked == 0 && pending == 0 && qtail == 0 -> locked = LOCKED; goto cs
		:: else -> skip
		fi
	}
	atomic { n = qtail; qtail = me + 1 } /* step: xchg-tail */
	if
	:: n != 0 ->
		nnext[n - 1] = me + 1; /* step: link-prev */
		n = 0;
		pv_wait_node()
	:: else -> skip
	fi;
	pv_wait_head_or_lock();

	/* claim */
	atomic { /* step: claim-last */
		assert(locked == LOCKED);
		if
		:: qtail == me + 1 -> qtail = 0; goto cs
		:: else -> skip
		fi
	}
	atomic { nnext[me] != 0 -> n = nnext[me] - 1 } /* step: wait-next */
#ifdef MUT_KICKNODE_FIRST
	pv_kick_node(n);
	nlocked[n] = 1; /* step: hand-head */
#else
	nlocked[n] = 1; /* step: hand-head */
	pv_kick_node(n);
#endif
	n = 0
}

/* ---- qspin/lock.go ---- */

/* The end of a round. */
inline round_done() {
	rounds++;
	if
	:: ITER > 0 && rounds == ITER -> finished++; goto end
	:: else -> rounds = (ITER > 0 -> rounds : 0)
	fi
}

active [NCPU] proctype g() {
	byte me = _pid;
	byte o;      /* scratch */
	byte n;      /* predecessor / successor / node to kick */
	bit hashed;  /* pvWaitHeadOrLock's hashed */
	bit fair;    /* pvWaitHeadOrLock's fair: the head is starving */
	byte i;      /* scratch loop index */
	byte sc;     /* steal polls */
	bit ingate;  /* counted in the gate (until Leave) */
	bit gfair;   /* Gate.admit: by the fairness bound */
	bit rc;      /* Gate.admit was called by the re-check (else by a release) */
#ifdef MUT_GATE_FIRST
	bit look;    /* the look at the gate before the release */
#endif
	byte rounds;

again:
	atomic { /* step: fast-cas */
		if
		:: locked == 0 && pending == 0 && qtail == 0 -> locked = LOCKED; goto cs
		:: else -> skip
		fi
	}
#if CAP < NCPU
	/* lockPV: Gate.Enter: active if the active set has room, else
	 * passive */
	atomic {
		ingate = 1;
		if
		:: gact < CAP -> gact++
		:: else -> gpas++; goto passive
		fi
	}
contended:
	contend();
#else
	/* No restriction: the gate counts every locker active, which nothing
	 * reads while no waiter is passive, so the model leaves the count
	 * out. */
contended:
	steal();
#endif
queued:
	queue();

cs:
	/* Gate.Leave (deferred in lockPV) if we passed the gate. Our node is
	 * dead until our next queue() resets it: clear it to keep stale
	 * values out of the state (a kick may still reach our waiter). */
	atomic {
		gact = gact - ingate; ingate = 0;
		assert(incs == 0);
		incs++;
		nlocked[me] = 0; nnext[me] = 0; nstate[me] = RUNNING
	}
progress_cs:
#ifdef MUT_GATE_FIRST
	look = (gpas > 0);
#endif
	/* Unlock: the fast CAS of a word that is LOCKED and nothing else
	 * (every batch-th release takes the outlined path first, whose
	 * release() tries the same CAS), else unlockPV */
	atomic { /* step: unlock-fast */
		incs--;
		if
		:: locked == LOCKED && pending == 0 && qtail == 0 -> locked = 0; goto unlocked
		:: else -> skip
		fi
	}
	unlock_pv();
unlocked:
	/* after the release, one load of the gate (Waiting) */
#ifdef MUT_GATE_FIRST
	atomic { /* step: unlock-gate-check */
		if
		:: look -> look = 0
		:: else -> round_done(); goto again
		fi
	}
#else
	atomic { /* step: unlock-gate-check */
		if
		:: gpas > 0 -> skip
		:: else -> round_done(); goto again
		fi
	}
#endif
	/* Gate.Released: one load of the state picks the case */
	atomic { /* step: unlock-gate */
		if
		:: gpas == 0 || gw -> goto done /* none, or one on its way in */
		:: else -> skip
		fi;
		if
		:: gact == 0 -> gfair = 0 /* drained */
		:: gact != 0 ->
			if
			:: gfair = 1 /* the fairness bound */
			:: goto done /* no clock look, or the bound has not passed */
			fi
		fi
	}
admit:
	/* Gate.admit: count the oldest out of the passive waiters and set W,
	 * then move the head past its ticket (whose waiter the kick that
	 * follows wakes) */
	atomic {
		if
		:: gpas > 0 && !gw && (gfair || gact == 0) -> gpas--; gw = 1
		:: else -> goto admitdone /* none left, one on its way, or not drained */
		fi
	}
	gadm = 1;
admitdone:
	if
	:: rc -> atomic { rc = 0; gfair = 0 } goto rechecked
	:: else -> gfair = 0
	fi;
done:
	atomic { round_done() }
	goto again;

passive:
	/* Gate.wait, of a waiter that counted itself passive (a queued
	 * lock's mark does nothing): the re-check of the lock (Gated.Free),
	 * then the halt until it is admitted */
	if
	:: locked == 0 -> rc = 1; goto admit /* free: admit the oldest */
	:: else -> skip
	fi;
rechecked:
	/* the halt ends when a ticket is admitted (gate.pml: the admitter's
	 * kick always comes) */
	atomic { gadm -> gadm = 0 }
	/* woken to active: add 1 - W to the state word */
	atomic {
		if
		:: gw -> gw = 0
		:: else -> gw = 1; gpas-- /* the borrow of the Go add */
		fi;
		gact++
	}
	goto contended;
end:
	skip
}

/* Every goroutine completes its ITER rounds (only meaningful with
 * ITER > 0). Check with weak fairness: pan -a -f -N alldone. */
ltl alldone { <> (finished == NCPU) }
