/*
 * qrwlock.pml -- the PV queued reader-writer lock of package qspin
 * (qspin/rwlock.go, qspin/rwlock_slow.go) with its halt/kick layer
 * (kick/waiter.go, kick/table.go).
 *
 * NCPU goroutines each loop: pick a role (reader or writer), lock,
 * critical section, unlock -- ITER times, or for ever when ITER is 0.
 * Every step whose order matters is its own atomic step, in program
 * order, and steps interleave sequentially consistently, as Go's
 * sync/atomic operations do. An atomic RMW of the count word and the
 * test of its result are one step. Each step is marked "step: <name>";
 * the same names mark the Go code, in the same order, and TestModelSteps
 * checks that the two lists agree.
 *
 *   count word   locked (the writer's byte), waiting (W), readers (the
 *                counts added, _QR_BIAS each), halted (H: the queue head
 *                is published to be kicked): the fields of the Go word
 *   wait lock    wl: the holder + 1, or 0. It is abstracted as an atomic
 *                mutex: its own queue, halts and kicks are qspin.pml's,
 *                its restriction gate.pml's. Its holder is the queue
 *                head, the only goroutine that waits on the count word
 *   kick.Table   pub: the head published under the lock + 1, or 0
 *   kick.Waiter  wstate[] (IDLE, SLEEPING, KICKED) and infutex[], as in
 *                gate.pml: the sticky token and FUTEX_WAIT with its
 *                expected value
 *
 * The head's spin may end after any failed poll, which covers every spin
 * threshold, or go on for ever (PV spinning off). The batch-th Unlock
 * takes the outlined release whatever the word: the fast CAS may be
 * skipped. TryLock and TryRLock are left out (TryRLock's take-back is
 * read-unbias's), and so is the directed yield after a kick.
 *
 * No spurious wake-ups and no halt timeout: a head leaves a halt only
 * because it was kicked, so alldone shows that kicks alone suffice.
 *
 * Properties: the assertions (a writer inside excludes everyone; a halt
 * ends only with a kick token), no invalid end state, and alldone (with
 * ITER > 0, every goroutine finishes: no waiter waits for ever) under
 * weak fairness.
 *
 * Mutants (spin -DMUT_xxx), each breaking one step; each must make spin
 * report an error:
 *   REBIAS_EARLY    read-rebias: the reader adds its count again before
 *                   it takes the queue: a writer head waits for that
 *                   count to leave, and the reader for the writer head to
 *                   leave the queue.
 *   NO_UNBIAS_KICK  read-unbias: a reader that found W takes its count
 *                   back without the kick check of an RUnlock, though it
 *                   may have been the last count a halted writer head
 *                   waited for.
 *   CLAIM_EARLY     write-claim: the writer head takes the lock once the
 *                   writer byte is clear, without waiting for the readers
 *                   inside to drain.
 *   NO_WRITE_KICK   write-kick-check: the writer's release skips the kick
 *                   though H is set.
 *   NO_READ_KICK    read-kick-check: the last reader out skips the kick
 *                   though H is set.
 *   RELEASE_BLIND   write-release: the writer looks at H, then releases
 *                   in a second step: a head that sets H in between is
 *                   never kicked.
 *   NO_RECHECK      rw-recheck: the head halts after setting H without
 *                   looking at the word that setting returned.
 *   FLAG_FIRST      rw-publish: the head sets H (and takes its re-check)
 *                   before it publishes itself: a release in between
 *                   finds nobody to kick.
 *   ARM_LATE        rw-arm: the head arms after its re-check, just before
 *                   it halts, erasing a kick that came in between.
 */

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* rounds per goroutine; 0 = for ever */
#endif

#define IDLE     0
#define SLEEPING 1
#define KICKED   2

#define READER 0
#define WRITER 1

/* the count word */
bit locked;
bit waiting;
byte readers;
bit halted;

/* the wait lock, the kick table */
byte wl;
byte pub;

/* the waiters */
byte wstate[NCPU];
bit infutex[NCPU];

/* observers */
byte rincs;    /* readers in the critical section */
byte wincs;    /* writers in the critical section */
byte finished; /* goroutines that did all their rounds */

/* ---- kick/waiter.go ---- */

/* Waiter.Arm: clear any old token. */
inline waiter_arm() {
	wstate[me] = IDLE /* step: waiter-arm */
}

/* Waiter.Halt with the futex backend: the CAS idle -> sleeping and the
 * FUTEX_WAIT with its expected value act as one step; a token already
 * there makes the halt return at once. Leaving consumes the token. */
inline waiter_halt() {
	atomic { /* step: waiter-halt-cas */
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; infutex[me] = 1 /* step: waiter-sleep */
		:: else -> skip
		fi
	}
	atomic {
		infutex[me] == 0 ->
		assert(wstate[me] == KICKED); /* only a kick ends a halt */
		wstate[me] = IDLE
	}
}

/* Waiter.Kick: swap in the token and FUTEX_WAKE the waiter if it was
 * sleeping. */
inline waiter_kick(k) {
	if
	:: wstate[k] == SLEEPING -> infutex[k] = 0
	:: else -> skip
	fi;
	wstate[k] = KICKED /* step: waiter-kick */
}

/* headReady: the head may go in (reader: no writer; writer: W alone) */
#define ready(r) ((r) == READER && !locked || (r) == WRITER && !locked && readers == 0)

inline round_done() {
	rounds++;
	if
	:: ITER > 0 && rounds == ITER -> finished++; goto end
	:: else -> rounds = (ITER > 0 -> rounds : 0)
	fi
}

/* The steps are laid out in the order of rwlock.go and rwlock_slow.go;
 * a goroutine jumps between them as the calls do (ret says where
 * readerLeft and kickHead return to). */
active [NCPU] proctype g() {
	byte me = _pid;
	bit role;
	bit hs;     /* H in the result of a release */
	bit last;   /* the release left no reader and no writer */
	bit ret;    /* readerLeft/kickHead return: 0 end of round, 1 queue */
	bit v;      /* the head's re-check */
	byte rounds;

again:
	if
	:: role = READER
	:: role = WRITER
	fi;
	if
	:: role == WRITER -> goto wlock
	:: else -> skip
	fi;

	/* ---- qspin/rwlock.go ---- */

	/* RLock: add the count; a writer bit sends us to the slow path */
	atomic { /* step: read-fast */
		readers++;
		if
		:: locked || waiting -> goto rslow
		:: else -> skip
		fi
	}
rcs:
	atomic { assert(wincs == 0); rincs++ }
	atomic { rincs-- }
	/* RUnlock: take the count back; H sends us to readerLeft's check */
	atomic { /* step: read-unlock */
		readers--; hs = halted; last = (readers == 0 && !locked)
	}
	ret = 0;
	goto readerleft;

wlock:
	/* Lock: CAS of a free word */
	atomic { /* step: write-fast */
		if
		:: !locked && !waiting && readers == 0 && !halted -> locked = 1; goto wcs
		:: else -> skip
		fi
	}
	goto wslow;
wcs:
	atomic { assert(wincs == 0 && rincs == 0); wincs++ }
	atomic { wincs-- }
	/* Unlock: CAS of a word holding the writer alone, unless this is a
	 * batch-th release */
	atomic { /* step: write-unlock-fast */
		if
		:: locked && !waiting && readers == 0 && !halted -> locked = 0; goto unlocked
		:: skip
		fi
	}
	goto wunlockslow;

	/* ---- qspin/rwlock_slow.go ---- */

rslow:
#ifdef MUT_REBIAS_EARLY
	goto rqueue; /* the count stays in while we queue */
#endif
	/* rlockSlow: take the count back, as an RUnlock does */
	atomic { /* step: read-unbias */
		readers--; hs = halted; last = (readers == 0 && !locked)
	}
#ifdef MUT_NO_UNBIAS_KICK
	goto rqueue;
#endif
	ret = 1;
	goto readerleft;
rqueue:
	atomic { wl == 0 -> wl = me + 1 } /* step: read-queue */
#ifndef MUT_REBIAS_EARLY
	/* as queue head, add the count again; wait for the writer, if any */
	atomic { /* step: read-rebias */
		readers++;
		if
		:: locked -> goto headwait
		:: else -> skip
		fi
	}
#else
	atomic {
		if
		:: locked -> goto headwait
		:: else -> skip
		fi
	}
#endif
rdequeue:
	wl = 0; /* step: read-dequeue */
	goto rcs;

wslow:
	atomic { wl == 0 -> wl = me + 1 } /* step: write-queue */
	atomic { /* step: write-trylock */
		if
		:: !locked && !waiting && readers == 0 && !halted -> locked = 1; goto wdequeue
		:: else -> skip
		fi
	}
	waiting = 1; /* step: write-waiting */
	goto headwait;
wdequeue:
	wl = 0; /* step: write-dequeue */
	goto wcs;

headwait:
	/* headWait: poll the word; after any failed poll, halt (or poll on,
	 * for ever if need be) */
	assert(wl == me + 1);
	do
	:: atomic { /* step: rw-head-try */
		if
		:: ready(role) && role == READER && halted -> goto rwclear
		:: ready(role) && role == READER -> goto rdequeue
		:: role == WRITER -> goto claim
		:: else -> skip
		fi
	   }
polled:
	   if
	   :: skip
	   :: break
	   fi
	od;
halt:
#if defined(MUT_FLAG_FIRST)
	atomic { halted = 1; v = ready(role) }
	waiter_arm(); /* step: rw-arm */
	atomic { pub = me + 1 } /* step: rw-publish */
#elif defined(MUT_ARM_LATE)
	atomic { pub = me + 1 } /* step: rw-publish */
	atomic { halted = 1; v = ready(role) } /* step: rw-flag */
#else
	waiter_arm(); /* step: rw-arm */
	atomic { pub = me + 1 } /* step: rw-publish */
	/* H by an atomic RMW, whose result is the re-check */
	atomic { halted = 1; v = ready(role) } /* step: rw-flag */
#endif
#ifdef MUT_NO_RECHECK
	v = 0;
#endif
	if /* step: rw-recheck */
	:: !v ->
#ifdef MUT_ARM_LATE
		waiter_arm(); /* step: rw-arm */
#endif
		waiter_halt() /* step: rw-halt */
	:: else -> skip
	fi;
	atomic { pub = 0; v = 0 } /* Withdraw */
	goto headwait;
rwclear:
	/* a reader head that set H clears it as it goes in */
	halted = 0; /* step: rw-clear */
	goto rdequeue;
claim:
	/* the writer head's CAS from W alone (H or not) to locked; a failed
	 * CAS polls again, which is another round of the spin */
	atomic { /* step: write-claim */
#ifdef MUT_CLAIM_EARLY
		if
		:: !locked -> locked = 1; waiting = 0; halted = 0; goto wdequeue
		:: else -> skip
		fi
#else
		if
		:: ready(WRITER) -> locked = 1; waiting = 0; halted = 0; goto wdequeue
		:: else -> skip
		fi
#endif
	}
	goto polled;

readerleft:
	/* readerLeft: H set and nobody left inside: kick the head */
	if /* step: read-kick-check */
#ifdef MUT_NO_READ_KICK
	:: ret == 1 && hs && last -> goto kick
#else
	:: hs && last -> goto kick
#endif
	:: else -> skip
	fi;
	goto back;

wunlockslow:
	/* unlockSlow: release by CAS; H in the word it replaced */
#ifdef MUT_RELEASE_BLIND
	hs = halted;
	locked = 0; /* step: write-release */
#else
	atomic { hs = halted; locked = 0 } /* step: write-release */
#endif
	ret = 0;
	if /* step: write-kick-check */
#ifdef MUT_NO_WRITE_KICK
	:: hs -> goto back
#else
	:: hs -> goto kick
#endif
	:: else -> goto back
	fi;

kick:
	/* kickHead: Table.KickWaiter: the published head, if any */
	atomic { /* step: rw-kick */
		if
		:: pub != 0 -> waiter_kick(pub - 1)
		:: else -> skip
		fi
	}
back:
	atomic { hs = 0; last = 0 }
	if
	:: ret == 1 -> ret = 0; goto rqueue
	:: else -> skip
	fi;
unlocked:
	atomic { round_done() }
	goto again;
end:
	skip
}

/* Every goroutine completes its ITER rounds (only meaningful with
 * ITER > 0): no waiter waits for ever. Check with weak fairness:
 * pan -a -f -N alldone. */
ltl alldone { <> (finished == NCPU) }
