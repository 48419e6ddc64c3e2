/*
 * ticket.pml -- the PV ticket lock of package ticket (ticket/lock.go) with
 * its halt/kick layer (kick/waiter.go, kick/table.go).
 *
 * NCPU vCPUs each loop: Lock, critical section, Unlock -- ITER times, or
 * for ever when ITER is 0. Every step of the Go code whose order matters
 * for mutual exclusion or for a lost wake-up is its own atomic step here,
 * and steps interleave sequentially consistently, as Go's sync/atomic
 * operations do (MUT_NOBARRIER models a store buffer). A few adjacent steps
 * that no other vCPU can tell apart are merged; each merge says why.
 *
 *   Go                                     model
 *   -------------------------------------  ----------------------------------
 *   Lock: word.Add(INC<<32); fast path     atomic { tk = qlen; qlen++ }
 *     if the old head == the old tail        (ticket 0 = being served)
 *   lockSlow: poll head SpinThreshold      poll tk == 0; the threshold may
 *     times, then halt()                     run out after any poll
 *   halt(): w.Arm()                        wstate = IDLE    } one step: no
 *           waiters.Publish(w, l, ticket)  pub = 1          } kicker looks
 *           word.Or(flagBit)               flag = 1 (atomic RMW)
 *           re-check head (pickup)         tk == 0 ?
 *           w.Halt(): CAS idle->sleeping,  see halt() below
 *             FUTEX_WAIT(&state, sleeping)
 *           waiters.Withdraw(w)            pub = 0
 *           back to polling                goto spin
 *   Unlock: prev := word.Load()            snapshot qlen, flag
 *           now := word.Add(INC)           release(): serve the next ticket,
 *                                            read flag in the same step
 *           if now has the flag:
 *   unlockSlow: if nobody queued in prev,  CAS: clears the flag only if no
 *     CAS(released, released &^ flag)        release and no ticket since
 *     else (or CAS failed) Kick(next)      kick(): token + FUTEX_WAKE
 *
 * Tickets are kept relative to the one being served: head is always 0,
 * qlen = tail - head, and tk[i] = vCPU i's ticket - head. Serving the next
 * ticket (Go: head += INC) decrements every live ticket instead of
 * incrementing head. This is the Go protocol up to renaming, with ticket
 * wrap-around left out: it is the subject of FuzzTicketWord, and the 32-bit
 * tickets only alias after 2^31 lockers. Keeping head at 0 quotients out the
 * rotation symmetry of the tickets and keeps the state space small.
 *
 * The model has no spurious wake-ups and no halt timeout: a waiter leaves a
 * halt only because it was kicked, so the liveness checks show that kicks
 * alone suffice (the Go timeout is a safety net, never load-bearing). The
 * Park backend (a goroutine waiter) behaves the same: its one-slot wake
 * channel keeps a wake-up sent before the waiter blocks, as the expected
 * value does for the futex.
 *
 * Properties: the assertions (mutual exclusion; Unlock of a held lock; a
 * halt ends only with a kick token), no invalid end state (no reachable
 * state where every vCPU is stuck), and the ltl formulas at the end.
 *
 * Mutants (spin -DMUT_xxx); each must make spin report an error:
 *   MUT_NOBARRIER   the release is a plain store that waits in the store
 *                   buffer while the unlocker reads the flag (x86 lets the
 *                   load pass the store): the lost wake-up of the 2013 thread.
 *   MUT_BLINDCLEAR  the unlocker clears the flag with a plain store instead
 *                   of the CAS against the released snapshot, erasing a flag
 *                   a later waiter has just set.
 *   MUT_KICKEARLY   the waiter flags and re-checks before publishing itself,
 *                   so the unlocker's kick finds nobody to wake.
 *   MUT_ARMLATE     the waiter arms (resets its token) after the re-check
 *                   instead of before publishing, erasing a kick that landed
 *                   in between.
 *   MUT_NOEXPECT    FUTEX_WAIT without the expected value: a kick between the
 *                   CAS to sleeping and the futex call wakes nobody.
 *
 * Two reorderings look alike but are harmless, and must verify:
 *   ALT_ARM_BEFORE_RECHECK  publish, flag, arm, re-check: a kick that the
 *                   late arm erases came from a release the re-check sees.
 *   ALT_FLAG_FIRST  flag, then arm and publish, then re-check: a kick that
 *                   finds nobody came from a release the re-check sees.
 */

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* lock/unlock rounds per vCPU; 0 = for ever */
#endif
#define NONE NCPU /* tk value of a vCPU that holds no ticket */

/* The lock word: tail - head, and the slowpath flag. */
byte qlen;
bit flag;

/* Per vCPU: its ticket while it waits or holds (NONE otherwise). */
byte tk[NCPU] = NONE;

/* kick.Waiter: the state word, which is also the futex word. */
#define IDLE     0
#define SLEEPING 1
#define KICKED   2
byte wstate[NCPU];
bit infutex[NCPU]; /* the thread is blocked in FUTEX_WAIT */

/* kick.Table for this one lock: pub[i] means vCPU i is published under
 * its ticket tk[i]. Publish, Withdraw and Kick each hold the bucket mutex,
 * so each is one atomic step here. */
bit pub[NCPU];

/* Unlock in progress: fresh[i] while no other release followed vCPU i's. */
bit fresh[NCPU];

/* Observers. */
byte incs;     /* vCPUs in the critical section */
byte finished; /* vCPUs that did all their rounds */

/* word.Add(INC) in Unlock: serve the next ticket. Returns the flag from the
 * same atomic step (nf). */
inline release() {
	atomic {
		qlen--;
		k = 0;
		do
		:: k < NCPU ->
			if
			:: k == me -> tk[k] = NONE; fresh[k] = 1
			:: k != me && tk[k] != NONE -> tk[k]--; fresh[k] = 0
			:: else -> fresh[k] = 0
			fi;
			k++
		:: else -> break
		od;
		k = 0;
#ifndef MUT_NOBARRIER
		nf = flag
#endif
	}
}

/* Table.Kick(l, next): find the waiter published under the ticket now
 * served; Waiter.Kick swaps in the token (sticky: it waits for a halt that
 * has not begun yet) and FUTEX_WAKEs the waiter if it was sleeping. If
 * another release followed ours, next was served already: its waiter has
 * withdrawn (a waiter always withdraws before it can take the lock), so
 * the Go lookup finds nobody and the model skips it. */
inline kick() {
	atomic {
		k = 0;
		do
		:: fresh[me] && k < NCPU && !(pub[k] && tk[k] == 0) -> k++
		:: else -> break
		od;
		if
		:: fresh[me] && k < NCPU ->
			if
			:: wstate[k] == SLEEPING -> infutex[k] = 0 /* FUTEX_WAKE */
			:: else -> skip /* early kick: the token waits */
			fi;
			wstate[k] = KICKED
		:: else -> skip
		fi;
		k = 0
	}
}

/* Waiter.Halt(0) with the futex backend, then Table.Withdraw.
 *
 * Go: CAS(state, idle, sleeping) -- failing means a token is already here --
 * then FUTEX_WAIT(&state, sleeping), which the kernel refuses (EAGAIN) when
 * a kicker has swapped in the token meanwhile. Thanks to the expected value
 * the CAS and the futex call act as one step (a kick between them ends like
 * a kick after the sleep began), so the good model merges them. Leaving the
 * halt consumes the token and withdraws; no one else can kick this ticket
 * in between, so that is one step as well. */
inline halt() {
#ifdef MUT_NOEXPECT
	atomic {
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; o = 1
		:: else -> o = 0
		fi
	}
	/* a FUTEX_WAIT that sleeps whatever the word holds by now */
	atomic { infutex[me] = o; o = 0 }
#else
	atomic {
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; infutex[me] = 1
		:: else -> skip /* token already here: do not sleep */
		fi
	}
#endif
	atomic {
		infutex[me] == 0 ->
		assert(wstate[me] == KICKED); /* only a kick ends a halt */
		wstate[me] = IDLE;
		pub[me] = 0
	}
}

active [NCPU] proctype vcpu() {
	byte me = _pid;
	byte k, o;   /* scratch */
	byte ps;     /* Unlock: qlen in the snapshot prev */
	bit pf, nf;  /* Unlock: flag in prev; flag returned by the release */
	byte rounds;

again:
	/* Lock: take a ticket; the fast path tests the old word from the same
	 * atomic add. */
	atomic {
		tk[me] = qlen;
		qlen++;
		assert(qlen <= NCPU);
		if
		:: tk[me] == 0 -> goto cs
		:: else -> skip
		fi
	}
spin:
	do
	:: tk[me] == 0 -> goto cs
	:: tk[me] != 0 ->
		if
		:: skip  /* keep polling */
		:: break /* spin threshold used up */
		fi
	od;

	/* halt(): publish -> flag (atomic RMW) -> re-check -> halt */
#if defined(MUT_KICKEARLY)
	wstate[me] = IDLE;
	flag = 1;
	if
	:: tk[me] == 0 -> goto cs
	:: else -> skip
	fi;
	pub[me] = 1;
#elif defined(MUT_ARMLATE)
	pub[me] = 1;
	flag = 1;
	if
	:: tk[me] == 0 -> atomic { pub[me] = 0; wstate[me] = IDLE } goto cs
	:: else -> skip
	fi;
	wstate[me] = IDLE;
#elif defined(ALT_ARM_BEFORE_RECHECK)
	pub[me] = 1;
	flag = 1;
	wstate[me] = IDLE;
	if
	:: tk[me] == 0 -> atomic { pub[me] = 0; wstate[me] = IDLE } goto cs
	:: else -> skip
	fi;
#elif defined(ALT_FLAG_FIRST)
	flag = 1;
	atomic { wstate[me] = IDLE; pub[me] = 1 }
	if
	:: tk[me] == 0 -> atomic { pub[me] = 0; wstate[me] = IDLE } goto cs
	:: else -> skip
	fi;
#else
	/* Arm, then Publish: nobody reads wstate[me] before it is published */
	atomic { wstate[me] = IDLE; pub[me] = 1 }
	/* word.Or(flagBit), an atomic RMW: with the unlocker's atomic add,
	 * either its flag test sees this flag or our re-check sees its head */
	flag = 1;
	if
	:: tk[me] == 0 ->
		/* pickup: withdraw. A token a kick left here is dead (the next
		 * Arm clears it; no kicker looks at an unpublished waiter), so
		 * the model clears it now. */
		atomic { pub[me] = 0; wstate[me] = IDLE }
		goto cs
	:: else -> skip
	fi;
#endif
	halt();
	goto spin; /* whatever woke us, poll again; never assume the lock */

cs:
	/* The critical section lasts until Unlock starts. */
	atomic { assert(incs == 0); incs++ }
progress_cs:
	/* Unlock: prev := word.Load() */
	atomic {
		incs--;
		assert(tk[me] == 0 && qlen > 0); /* we hold it */
		ps = qlen;
		pf = flag
	}
#ifdef MUT_NOBARRIER
	/* a plain store of head: it is still in the store buffer when the
	 * flag is loaded */
	nf = flag;
#endif
	release();
	if
	:: nf ->
		/* unlockSlow(prev): nobody queued in prev iff prev's tail is
		 * the ticket now served (ps == 1). */
		if
		:: ps == 1 ->
#ifdef MUT_BLINDCLEAR
			flag = 0;
			goto unlocked;
#else
			/* CAS(released, released &^ flag) */
			atomic {
				if
				:: fresh[me] && qlen == 0 && flag == pf -> flag = 0; goto unlocked
				:: else -> skip
				fi
			}
#endif
		:: else -> skip
		fi;
		kick()
	:: else -> skip
	fi;
unlocked:
	atomic { fresh[me] = 0; ps = 0; pf = 0; nf = 0 }
	rounds++;
	if
	:: ITER > 0 && rounds == ITER -> finished++
	:: else -> rounds = (ITER > 0 -> rounds : 0); goto again
	fi
}

/* No waiter sleeps for ever: whenever vCPU 0 is in FUTEX_WAIT, it later
 * leaves it. (All vCPUs run the same code from a symmetric start, so vCPU 0
 * stands for every vCPU.) Check with weak fairness: pan -a -f -N nohang. */
ltl nohang { [] (infutex[0] -> <> !infutex[0]) }

/* Every vCPU completes its ITER rounds (only meaningful with ITER > 0). */
ltl alldone { <> (finished == NCPU) }
