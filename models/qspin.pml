/*
 * qspin.pml -- the Linux paravirtualized queued spinlock: the PV slow path
 * of kernel/locking/qspinlock.c with the hooks of qspinlock_paravirt.h
 * (pv_wait_node, pv_kick_node, pv_wait_head_or_lock, the lock -> node hash,
 * __pv_queued_spin_unlock_slowpath) and KVM's pv_wait/pv_kick.
 *
 * NCPU vCPUs each loop: lock, critical section, unlock -- ITER times, or
 * for ever when ITER is 0. Each vCPU has one queue node (no nesting).
 * Every access to shared state is its own atomic step, in program order,
 * and steps interleave sequentially consistently: the kernel's atomics and
 * barriers (xchg, cmpxchg, smp_store_mb, smp_mb__before_atomic) give the
 * pairs that matter that order, and Go's sync/atomic is sequentially
 * consistent. A few adjacent steps that no other vCPU can tell apart are
 * merged; each merge says why. Mutants model the missing barriers.
 *
 *   lock word           locked (0, LOCKED = 1, SLOW = 3), pending, qtail
 *                       (0 = no tail, else the vCPU number + 1)
 *   struct pv_node      nlocked[], nnext[] (0 = NULL, else vCPU + 1),
 *                       nstate[] (RUNNING, HALTED, HASHED)
 *   pv_lock_hash        with one lock the table reduces to the entry for
 *                       that lock: hlock (claimed), hnode (vCPU + 1)
 *   KVM pv_unhalted     unhalt[]: a kick that found the vCPU running waits
 *                       there and makes its next HLT return at once
 *   halted[]            the vCPU sits in HLT inside pv_wait
 *
 * pv_wait(ptr, val) is kvm_wait: with interrupts off, return if *ptr != val,
 * else safe_halt(). A kick between the check and the HLT leaves pv_unhalted
 * set, so the HLT returns at once: check and halt act as one step.
 * pv_kick(cpu) is the KICK_CPU hypercall: it unhalts a halted vCPU, else
 * leaves the token. The model has no other wake-ups (no interrupts, no
 * NMIs), so every halt must end with a kick.
 *
 * Spin loops bounded by SPIN_THRESHOLD poll and, after any failed poll, may
 * stop polling: this covers every threshold and every pv_wait_early choice.
 *
 * Properties: the assertions (mutual exclusion; the kernel's own BUG/WARN
 * conditions: one hash entry per lock, the entry exists when the unlocker
 * sees SLOW, the unlocker sees only LOCKED or SLOW, the new owner's locked
 * byte is LOCKED at the claim; a halt ends only with a kick), no invalid end
 * state, and the ltl formulas at the end.
 *
 * Mutants (spin -DMUT_xxx); each must make spin report an error:
 *   MUT_WAITNODE_NOMB   pv_wait_node stores HALTED without the full barrier
 *                       (smp_store_mb): the load of node->locked passes the
 *                       store, the holder sees RUNNING and leaves it halted.
 *   MUT_SLOW_BLIND      the head marks the lock SLOW with a plain store instead
 *                       of xchg, so it cannot tell that the lock was released
 *                       meanwhile and halts on a free lock.
 *   MUT_SLOW_BEFORE_HASH the head sets SLOW before hashing itself: an unlocker
 *                       can see SLOW while the entry is not published yet.
 *   MUT_KICKNODE_NOSLOW pv_kick_node hashes the halted successor but does not
 *                       set SLOW, so the unlock takes the fast path and never
 *                       kicks it.
 *   MUT_DOUBLEHASH      the head marks itself HALTED, not HASHED, before
 *                       pv_wait (before kernel commit 229ce6315747): a late
 *                       pv_kick_node hashes the lock a second time.
 */

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* lock/unlock rounds per vCPU; 0 = for ever */
#endif

#define LOCKED 1 /* _Q_LOCKED_VAL */
#define SLOW   3 /* _Q_SLOW_VAL */

#define RUNNING 0 /* vcpu_running */
#define HALTED  1 /* vcpu_halted: pv_wait_node only */
#define HASHED  2 /* vcpu_hashed: hashed + halted, queue head */

/* the lock word */
byte locked;
bit pending;
byte qtail;

/* the per-vCPU queue nodes */
bit nlocked[NCPU];
byte nnext[NCPU];
byte nstate[NCPU];

/* the hash entry for this lock */
bit hlock;
byte hnode;

/* KVM */
bit unhalt[NCPU];
bit halted[NCPU];

/* observers */
byte incs;     /* vCPUs in the critical section */
byte finished; /* vCPUs that did all their rounds */
bit stolen;    /* pulse: a vCPU just took the lock in the unfair trylock */

/* pv_wait(ptr, val) as kvm_wait; cond is "*ptr == val". */
inline pv_wait(cond) {
	atomic {
		if
		:: (cond) && unhalt[me] -> unhalt[me] = 0 /* HLT returns at once */
		:: (cond) && !unhalt[me] -> halted[me] = 1  /* HLT */
		:: else -> skip
		fi
	}
	halted[me] == 0 /* until pv_kick */
}

/* pv_kick(cpu): kvm_kick_cpu */
inline pv_kick(cpu) {
	atomic {
		if
		:: halted[cpu] -> halted[cpu] = 0
		:: else -> unhalt[cpu] = 1
		fi
	}
}

/* pv_hash(lock, node): claim the entry (cmpxchg he->lock NULL -> lock),
 * then WRITE_ONCE(he->node, node). The kernel relies on a lock never taking
 * two entries (the table is sized for that and BUG()s when full), which the
 * model asserts. Nobody reads the entry
 * before the hasher's next step (SLOW comes after the hash, or the hasher
 * is the owner and unlocks itself), so the two stores are one step. */
inline pv_hash(cpu) {
	atomic { assert(hlock == 0); hlock = 1; hnode = cpu + 1 }
}

/* pv_kick_node(lock, next): run by the new lock holder right after
 * next->locked = 1. Turns a halted successor into a hashed queue head that
 * the unlock will kick, rather than waking it now. */
inline pv_kick_node(n) {
	/* smp_mb__before_atomic(); try_cmpxchg(&pn->state, HALTED, HASHED) */
	atomic {
		if
		:: nstate[n] == HALTED -> nstate[n] = HASHED; o = 1
		:: else -> o = 0 /* running: it will see node->locked itself */
		fi
	}
	if
	:: o ->
		o = 0;
#ifndef MUT_KICKNODE_NOSLOW
		/* we own the lock: a plain store of SLOW is enough */
		locked = SLOW;
#endif
		pv_hash(n)
	:: else -> skip
	fi
}

/* pv_wait_node(node, prev): queued behind prev; returns once node->locked
 * says we are the queue head. */
inline pv_wait_node() {
	do
	::
		do
		:: nlocked[me] -> goto waited
		:: else ->
			if
			:: skip  /* cpu_relax, poll again */
			:: break /* SPIN_THRESHOLD done, or pv_wait_early */
			fi
		od;
#ifdef MUT_WAITNODE_NOMB
		o = nlocked[me];        /* the load runs ahead of the store */
		nstate[me] = HALTED;
#else
		nstate[me] = HALTED;    /* smp_store_mb(pn->state, vcpu_halted) */
		o = nlocked[me];        /* pairs with pv_kick_node's barrier */
#endif
		if
		:: !o -> o = 0; pv_wait(nstate[me] == HALTED)
		:: else -> o = 0
		fi;
		/* cmpxchg(&pn->state, HALTED, RUNNING): keeps HASHED if the
		 * holder hashed us meanwhile */
		atomic {
			if
			:: nstate[me] == HALTED -> nstate[me] = RUNNING
			:: else -> skip
			fi
		}
	od;
waited:
	skip
}

/* pv_wait_head_or_lock(lock, node): the queue head spins for the lock,
 * hashes itself once and halts; returns only with the lock held. */
inline pv_wait_head_or_lock() {
	/* pv_kick_node hashed us already: do not hash again */
	lp = (nstate[me] == HASHED);
	do
	::
		nstate[me] = RUNNING;
		pending = 1; /* set_pending: no more lock stealing */
		do
		:: atomic {
			/* trylock_clear_pending: locked_pending 0,1 -> 1,0 */
			locked == 0 -> assert(pending == 1); locked = LOCKED; pending = 0
		   }
		   goto gotlock
		:: locked != 0 ->
			if
			:: skip  /* cpu_relax */
			:: break /* SPIN_THRESHOLD done */
			fi
		od;
		pending = 0; /* clear_pending */
		if
		:: !lp ->
			lp = 1;
#if defined(MUT_SLOW_BEFORE_HASH)
			atomic { o = locked; locked = SLOW }
			pv_hash(me);
#elif defined(MUT_SLOW_BLIND)
			pv_hash(me);
			locked = SLOW;
			o = 1; /* no xchg: it cannot see a release */
#else
			pv_hash(me);
			/* xchg(&lock->locked, SLOW): after the hash entry is
			 * complete, and atomic so that a release in between is
			 * seen (old value 0) instead of slept on */
			atomic { o = locked; locked = SLOW }
#endif
			if
			:: o == 0 ->
				/* the lock was free: it is ours. Store LOCKED, then
				 * unhash (WRITE_ONCE(*lp, NULL)); while locked is
				 * SLOW nobody else acts on the lock, so one step */
				atomic { locked = LOCKED; hlock = 0; hnode = 0 }
				goto gotlock
			:: else -> o = 0
			fi
		:: else -> skip
		fi;
#ifdef MUT_DOUBLEHASH
		nstate[me] = HALTED;
#else
		nstate[me] = HASHED;
#endif
		pv_wait(locked == SLOW)
		/* the lock may have been stolen after our kick: go round */
	od;
gotlock:
	lp = 0
}

active [NCPU] proctype vcpu() {
	byte me = _pid;
	byte o;      /* scratch */
	byte n;      /* predecessor / successor vCPU */
	bit lp;      /* the head has hashed itself (pv_wait_head_or_lock's lp) */
	bit tr, st;  /* hybrid trylock: try the CAS; stop trying */
	byte rounds;

again:
	/* queued_spin_lock: cmpxchg(val, 0, LOCKED); on failure the PV
	 * slowpath starts at pv_queue with a fresh node (private until
	 * xchg_tail publishes it) */
	atomic {
		if
		:: locked == 0 && pending == 0 && qtail == 0 -> locked = LOCKED; goto cs
		:: else -> nlocked[me] = 0; nnext[me] = 0; nstate[me] = RUNNING
		fi
	}

	/* queued_spin_trylock = pv_hybrid_queued_unfair_trylock: steal the
	 * lock while the queue head is not spinning (pending clear) */
	do
	::
		atomic { /* val = atomic_read(&lock->val) */
			tr = (locked == 0 && pending == 0);
			st = (qtail == 0 || pending == 1)
		}
		if
		:: tr ->
			/* cmpxchg(&lock->locked, 0, LOCKED) */
			atomic {
				tr = 0;
				if
				:: locked == 0 -> locked = LOCKED; st = 0; stolen = 1; goto cs
				:: else -> skip
				fi
			}
		:: else -> skip
		fi;
		if
		:: st -> st = 0; break
		:: else -> skip /* cpu_relax */
		fi
	od;

	/* xchg_tail: queue our node; if there was a tail, link it with
	 * WRITE_ONCE(prev->next, node). Only prev reads prev->next, and it
	 * just waits for it, so the link joins the xchg in one step. */
	atomic {
		n = qtail;
		qtail = me + 1;
		if
		:: n != 0 -> nnext[n - 1] = me + 1; o = 1
		:: else -> o = 0
		fi;
		n = 0
	}
	if
	:: o -> o = 0; pv_wait_node()
	:: else -> skip
	fi;

	/* queue head */
	pv_wait_head_or_lock();

	/* locked: the claim */
	atomic {
		assert(locked == LOCKED); /* nobody can have set SLOW yet */
		if
		:: qtail == me + 1 -> qtail = 0; goto cs /* cmpxchg(val, LOCKED) */
		:: else -> skip
		fi
	}
	/* somebody queued behind us: set_locked() (a no-op, we hold the
	 * lock), wait for next, make it the queue head */
	atomic {
		nnext[me] != 0 -> /* smp_cond_load_relaxed(&node->next, VAL) */
		n = nnext[me] - 1;
		nlocked[n] = 1 /* arch_mcs_spin_unlock_contended: store-release */
	}
	pv_kick_node(n);
	n = 0;

cs:
	/* The critical section lasts until the unlock. Our node is dead from
	 * here until the next slowpath initialises it (the predecessor that
	 * may still look at it does so before it unlocks), so the model
	 * clears it to keep stale values out of the state. */
	atomic {
		assert(incs == 0);
		incs++;
		stolen = 0;
		nlocked[me] = 0; nnext[me] = 0; nstate[me] = RUNNING
	}
progress_cs:
	/* __pv_queued_spin_unlock: cmpxchg_release(&lock->locked, LOCKED, 0) */
	atomic {
		incs--;
		if
		:: locked == LOCKED -> locked = 0; goto unlocked
		:: else -> assert(locked == SLOW) /* else WARN: corrupted */
		fi
	}
	/* __pv_queued_spin_unlock_slowpath: unhash (BUG() if no entry),
	 * release, then kick the vCPU of the node we found */
	atomic {
		assert(hlock == 1 && hnode != 0);
		n = hnode - 1;
		hlock = 0; hnode = 0
	}
	locked = 0; /* smp_store_release */
	pv_kick(n);
	n = 0;
unlocked:
	rounds++;
	if
	:: ITER > 0 && rounds == ITER -> finished++
	:: else -> rounds = (ITER > 0 -> rounds : 0); goto again
	fi
}

/* No vCPU stays halted for ever (vCPU 0 stands for all by symmetry) --
 * unless the lock is stolen infinitely often. The hybrid trylock lets a
 * vCPU that keeps re-locking take the lock every time it is released while
 * the head is between spin rounds (pending clear, or set only after the
 * stealer read the word): under weak fairness alone the head can then
 * spin for ever and its successor stay halted (spin finds this cycle in
 * the kernel's protocol). That is starvation by an unfair lock, not a lost
 * wake-up, so runs with infinitely many steals are excluded. */
ltl nohang { ([] <> stolen) || [] (halted[0] -> <> !halted[0]) }

/* Every vCPU completes its ITER rounds (only meaningful with ITER > 0). */
ltl alldone { <> (finished == NCPU) }
