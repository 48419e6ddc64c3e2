/*
 * ticket.pml -- the PV ticket lock of package ticket (ticket/lock.go) with
 * its halt/kick layer (kick/waiter.go, kick/table.go) and the concurrency
 * restriction in front of its slow path (internal/lockcore/gate.go, reduced
 * to what the lock sees of it).
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
 *   Lock: w := word.Load(); if free,       take-ticket: load; then a CAS of
 *     CAS(w, w + INC<<32)                    the loaded word takes a ticket
 *   lockContended: gate.Enter              gact++, or passive (gpas++)
 *   lockQueued: word.Add(INC<<32)          queue-ticket; served at once if
 *                                            the old head is the ticket
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
 *   gate.Leave (deferred), once held       gact-- with the entry to the
 *                                            critical section
 *   Unlock: prev := word.Load()            snapshot qlen, flag
 *           now := word.Add(INC)           release(): serve the next ticket,
 *                                            read flag in the same step
 *           if now has the flag:
 *   unlockSlow: passive := gate.Waiting()  unlock-gate-check: gpas > 0,
 *                                            and no watcher (gx)
 *     if nobody queued in prev and not     CAS: clears the flag only if no
 *     passive: CAS(released, &^ flag)        release and no ticket since
 *     else (or CAS failed), if queued or   kick(): token + FUTEX_WAKE
 *     gate.Active(): Kick(next)
 *     if passive: gate.Released            unlock-gate: admit, see below
 *   Gate.wait (passive): MarkPassive       gate-set-flag: flag = 1 (RMW)
 *     re-check Free, halt until admitted   admit if free; wait for gadm
 *
 * The lock word is the Go word with W-bit halves instead of 32-bit ones:
 * head in the low W bits, tail (its LSB the slowpath flag) in the high W
 * bits, INC = 2. W = 3 gives four tickets, enough for NCPU = 3 lockers, and
 * head wraps every fourth release: the unlocker then adds INC - 2^W so that
 * head's carry does not reach tail (Go: delta -= carry). Tickets are
 * absolute, so a kick of the table's waiter for ticket t can reach a waiter
 * of a later lap that holds t again, as in Go. The fast path's CAS fails
 * if the word changed since its load, which a flag set or cleared does
 * while the lock stays free: the load and the CAS are two steps.
 *
 * The waking hint (Lock.waking): an unlocker that kicks stores next|1
 * before Table.Kick and takes it back (CAS to 0) if the table had no
 * waiter for next; a spinning waiter that sees waking == head|1 halts at
 * once; the waiter that acquires retires a hint naming its ticket. The
 * hint is only a hint (an early halt is a halt like any other), so what
 * the model checks about it is that it does not outlive its use: when
 * every vCPU has finished, the hint is 0.
 *
 * The gate (lockcore.Gate): a contended locker counts itself active if
 * fewer than CAP waiters are, and only then takes a ticket; otherwise it
 * counts itself passive, marks the lock (the slowpath flag, so that every
 * release runs unlockSlow), re-checks the lock, admits the oldest passive
 * waiter itself if the lock is free, and waits until a passive waiter is
 * admitted; it then clears W and counts itself active. unlockSlow clears
 * the flag only if no passive waiter waited at its look; otherwise it
 * calls Gate.Released: unless an admitted waiter is on its way in (W), a
 * release that finds no active waiter (drained), or one by the fairness
 * bound (a free choice), admits the oldest. gate.pml checks the gate's
 * own steps, the passive tickets and the halt and kick of a passive
 * waiter; here the tickets are one admission bit that any passive waiter
 * may take, and the halt is a wait for it. The first passive waiter may
 * watch the lock (X, gx: a free choice, as canWatch is): while it does,
 * Waiting reports false, so unlockSlow clears the flag, its mark, and
 * leaves the gate alone; the watcher admits itself when a look finds the
 * lock free, or by the fairness bound (a free choice), and when the watch
 * ends it clears X, sets the flag again, and re-checks the lock before it
 * waits. With CAP = NCPU,
 * the default, every locker is active, and the model is the unrestricted
 * lock; the checks of restriction use CAP = 1.
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
 * state where every vCPU is stuck; with ITER > 0, a passive waiter that
 * nobody admits is stuck once the others are done), and the ltl formulas
 * at the end.
 *
 * With CAP = 1 the model of unlockSlow as written fails: a waiter that
 * counts itself passive after the look at the gate marks a flag that is
 * still set, so its Or changes nothing the clear-CAS could see, and the
 * CAS erases its mark; the lock is then taken and released with no flag,
 * and nobody looks at the gate again. FIX_REMARK is the change that closes
 * it: after a clear-CAS that succeeds, look at the gate again, and if a
 * passive waiter waits now, set the flag again and run Gate.Released.
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
 *   MUT_NOCARRY     the unlocker does not cancel head's carry when head
 *                   wraps: the carry lands in tail (flag, then ticket).
 *   MUT_WAKING_LATE the unlocker stores the waking hint after the kick: the
 *                   kicked holder can acquire first, and the hint stays.
 *   MUT_NO_RETIRE   the waiter that acquires does not retire the hint.
 *   MUT_KICK_QUEUED the unlocker whose clear-CAS failed kicks only if a
 *                   ticket was queued in its snapshot, whatever the gate's
 *                   active count: a waiter that took its ticket after the
 *                   snapshot and halted is never kicked.
 * With CAP = 1 and FIX_REMARK:
 *   MUT_NO_MARK     the passive waiter does not set the flag.
 *   MUT_NO_WATCH_MARK  the watcher clears X and re-checks without setting
 *                   the flag again: a release cleared it while X hid the
 *                   passive waiters, and the release after the re-check
 *                   no longer looks at the gate.
 *   MUT_CLEAR_PASSIVE  the clear-CAS ignores passive waiters, and the
 *                   release that cleared the flag returns.
 *
 * Two reorderings look alike but are harmless, and must verify:
 *   ALT_ARM_BEFORE_RECHECK  publish, flag, arm, re-check: a kick that the
 *                   late arm erases came from a release the re-check sees.
 *   ALT_FLAG_FIRST  flag, then arm and publish, then re-check: a kick that
 *                   finds nobody came from a release the re-check sees.
 */

/* The Go code has the remark (ticket/lock.go, after clear-cas): it is
 * modelled by default; -DNO_REMARK models the release without it. */
#ifndef NO_REMARK
#ifndef FIX_REMARK
#define FIX_REMARK
#endif
#endif

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* lock/unlock rounds per vCPU; 0 = for ever */
#endif
#define NONE 255 /* tk value of a vCPU that holds no ticket */

#define W     3              /* bits of head and of tail */
#define HMOD  8              /* 2^W */
#define WMOD  64             /* 2^(2W): the word */
#define INC   2
#define HEAD  (word % HMOD)
#define TAIL  (word / HMOD)  /* with the flag in its LSB */
#define FLAG  ((word / HMOD) & 1)

/* The lock word: tail << W | head. */
byte word;
/* Lock.waking: ticket|1 of a holder kicked awake, or 0. */
byte waking;

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

/* lockcore.Gate, reduced to what the lock sees of it (gate.pml models
 * it step by step, with the tickets, halt and kick of a passive waiter):
 * the fields of its state word, gact (active waiters), gw (W: an admitted
 * waiter is on its way in) and gpas (passive waiters), and gadm, an
 * admission that no passive waiter has seen yet (the head moved past a
 * ticket). Any passive waiter may take it: the model drops the FIFO order
 * of the passive tickets, which only decides which waiter goes first. */
#ifndef CAP
#define CAP NCPU /* the cap of active waiters; NCPU: no restriction */
#endif
byte gact;
bit gw;
bit gx; /* X: the first passive waiter watches the lock */
byte gpas;
bit gadm;

/* Observers. */
byte incs;     /* vCPUs in the critical section */
byte finished; /* vCPUs that did all their rounds */

/* ---- kick/waiter.go ---- */

/* Waiter.Arm */
inline waiter_arm() {
	wstate[me] = IDLE /* step: waiter-arm */
}

/* Waiter.Halt(0) with the futex backend.
 *
 * Go: CAS(state, idle, sleeping) -- failing means a token is already here --
 * then FUTEX_WAIT(&state, sleeping), which the kernel refuses (EAGAIN) when
 * a kicker has swapped in the token meanwhile. Thanks to the expected value
 * the CAS and the futex call act as one step (a kick between them ends like
 * a kick after the sleep began), so the good model merges them. Leaving the
 * halt consumes the token; the deferred Table.Withdraw of ticket's halt
 * follows, and no one else can kick this ticket in between, so that is one
 * step as well. */
inline waiter_halt() {
#ifdef MUT_NOEXPECT
	atomic { /* step: waiter-halt-cas */
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; o = 1
		:: else -> o = 0
		fi
	}
	/* a FUTEX_WAIT that sleeps whatever the word holds by now */
	atomic { infutex[me] = o; o = 0 } /* step: waiter-sleep */
#else
	atomic { /* step: waiter-halt-cas */
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; infutex[me] = 1 /* step: waiter-sleep */
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

/* Waiter.Kick: swap in the token (sticky: it waits for a halt that has
 * not begun yet) and FUTEX_WAKE the waiter if it was sleeping. */
inline waiter_kick(k) {
	if
	:: wstate[k] == SLEEPING -> infutex[k] = 0 /* FUTEX_WAKE */
	:: else -> skip /* early kick: the token waits */
	fi;
	wstate[k] = KICKED /* step: waiter-kick */
}

/* ---- ticket/lock.go ---- */

/* Table.Kick(l, next): kick the waiter published under ticket next, if
 * any; found reports whether there was one. */
inline table_kick(t) {
	atomic {
		k = 0;
		do
		:: k < NCPU && !(pub[k] && tk[k] == t) -> k++
		:: else -> break
		od;
		if
		:: k < NCPU -> waiter_kick(k); found = 1
		:: else -> found = 0
		fi;
		k = 0
	}
}

active [NCPU] proctype vcpu() {
	byte me = _pid;
	byte k, o;   /* scratch */
	byte ps;     /* Unlock: the snapshot prev */
	byte nx;     /* unlockSlow: the ticket now served */
	bit nf;      /* Unlock: flag returned by the release */
	bit found;   /* unlockSlow: Table.Kick found a waiter */
	bit pv;      /* unlockSlow: passive waiters wait at the gate */
	bit fair;    /* Gate.admit: by the fairness bound */
	byte rc;     /* who called Gate.admit: 0 unlockSlow, 1 the re-check, 2 the
	              * watcher, 3 the re-check after the watch */
	bit watching; /* we set X as we counted ourselves passive */
	byte rounds;

again:
	/* Lock: load the word (o = word + 1 if the lock is free); a free lock
	 * is taken by a CAS of the loaded word that takes the next ticket. The
	 * CAS fails if the word changed since the load: a ticket taken, or the
	 * flag set or cleared, which leaves the lock free. */
	atomic { /* step: take-ticket */
		if
		:: (TAIL & ~1) == HEAD -> o = word + 1
		:: else -> skip
		fi
	}
	if
	:: o != 0 ->
		atomic {
			if
			:: word == o - 1 ->
				o = 0; tk[me] = HEAD; word = (word + INC * HMOD) % WMOD; goto cs
			:: else -> o = 0 /* the CAS failed */
			fi
		}
	:: else -> skip
	fi;
	/* lockContended: Gate.Enter, active if the active set has room */
	atomic {
		if
		:: gact < CAP -> gact++
		:: else ->
			if /* Gate.firstWatch: the first passive waiter may watch */
			:: gpas == 0 && !gx -> gx = 1; watching = 1
			:: skip
			fi;
			gpas++; goto passive
		fi
	}
queue:
	/* lockQueued: take a ticket with an atomic add; it may be served at
	 * once */
	atomic { /* step: queue-ticket */
		tk[me] = TAIL & ~1;
		o = HEAD;
		word = (word + INC * HMOD) % WMOD;
		if
		:: tk[me] == o -> o = 0; goto gotlock
		:: else -> o = 0
		fi
	}
	goto spin;

unlock:
	/* Unlock: prev := word.Load() */
	atomic { /* step: unlock-snapshot */
		incs--;
		assert(tk[me] == HEAD && HEAD != (TAIL & ~1)); /* we hold it */
		ps = word
	}
#ifdef MUT_NOBARRIER
	/* a plain store of head: it is still in the store buffer when the
	 * flag is loaded */
	nf = FLAG;
#endif
	/* now := word.Add(delta): serve the next ticket, read the flag from
	 * the same atomic step */
	atomic {
#ifdef MUT_NOCARRY
		word = (word + INC) % WMOD; /* step: unlock-wrap */
#else
		if /* step: unlock-wrap */
		:: (HEAD + INC) % HMOD == 0 -> word = (word + INC + WMOD - HMOD) % WMOD
		:: else -> word = (word + INC) % WMOD
		fi;
#endif
		tk[me] = NONE;
#ifndef MUT_NOBARRIER
		nf = FLAG /* step: unlock-release */
#endif
	}
	if
	:: nf -> goto unlockslow
	:: else -> goto unlocked
	fi;

spin:
	/* lockSlow: poll head; halt at once if the hint says the holder of
	 * the ticket being served is only waking up */
	do
	:: atomic {
		/* two loads, merged: a waking hint that changes between them
		 * only decides whether this poll halts early, and a halt is
		 * safe whenever it happens */
		if /* step: poll-head */
		:: HEAD == tk[me] -> goto acquired
		:: else -> skip
		fi;
		if /* step: early-halt */
		:: waking == (HEAD | 1) -> o = 1
		:: else -> o = 0
		fi
	   }
		if
		:: o -> o = 0; break
		:: else ->
			if
			:: skip  /* keep polling */
			:: break /* spin threshold used up */
			fi
		fi
	od;
	goto halt;

acquired:
	/* acquired: retire a hint naming our ticket (load, then CAS) */
#ifndef MUT_NO_RETIRE
	atomic { /* step: retire-hint */
		if
		:: waking == (tk[me] | 1) -> waking = 0
		:: else -> skip
		fi
	}
#endif
	goto gotlock;

halt:
	/* halt(): arm, publish, flag (atomic RMW), re-check, halt */
#if defined(MUT_KICKEARLY)
	waiter_arm(); /* step: arm */
	skip; /* step: publish */
	word = word | HMOD; /* step: set-flag */
	if /* step: recheck */
	:: tk[me] == HEAD -> goto acquired
	:: else -> skip
	fi;
	pub[me] = 1;
#elif defined(MUT_ARMLATE)
	pub[me] = 1; /* step: publish */
	word = word | HMOD; /* step: set-flag */
	if /* step: recheck */
	:: tk[me] == HEAD -> atomic { pub[me] = 0; wstate[me] = IDLE } goto acquired
	:: else -> skip
	fi;
	waiter_arm(); /* step: arm */
#elif defined(ALT_ARM_BEFORE_RECHECK)
	pub[me] = 1; /* step: publish */
	word = word | HMOD; /* step: set-flag */
	waiter_arm(); /* step: arm */
	if /* step: recheck */
	:: tk[me] == HEAD -> atomic { pub[me] = 0; wstate[me] = IDLE } goto acquired
	:: else -> skip
	fi;
#elif defined(ALT_FLAG_FIRST)
	word = word | HMOD; /* step: set-flag */
	atomic { waiter_arm(); pub[me] = 1 } /* step: arm */ /* step: publish */
	if /* step: recheck */
	:: tk[me] == HEAD -> atomic { pub[me] = 0; wstate[me] = IDLE } goto acquired
	:: else -> skip
	fi;
#else
	/* Arm, then Publish: nobody reads wstate[me] before it is published */
	atomic {
		waiter_arm(); /* step: arm */
		pub[me] = 1 /* step: publish */
	}
	/* word.Or(flagBit), an atomic RMW: with the unlocker's atomic add,
	 * either its flag test sees this flag or our re-check sees its head */
	word = word | HMOD; /* step: set-flag */
	if /* step: recheck */
	:: tk[me] == HEAD ->
		/* pickup: the deferred withdraw. A token a kick left here is
		 * dead (the next Arm clears it; no kicker looks at an
		 * unpublished waiter), so the model clears it now. */
		atomic { pub[me] = 0; wstate[me] = IDLE }
		goto acquired
	:: else -> skip
	fi;
#endif
	waiter_halt(); /* step: halt */
	goto spin; /* whatever woke us, poll again; never assume the lock */

unlockslow:
	/* unlockSlow(prev): next is prev's head + INC; nobody queued in prev
	 * iff prev's tail is next. passive := gate.Waiting(), read after the
	 * release. */
	atomic { /* step: unlock-gate-check */
		nx = (ps % HMOD + INC) % HMOD;
		pv = (gpas > 0 && !gx)
	}
#ifdef MUT_BLINDCLEAR
	if
	:: ((ps / HMOD) & ~1) == nx && !pv -> word = word & ~HMOD; goto unlocked /* step: clear-cas */
	:: else -> skip
	fi;
#else
#ifdef MUT_CLEAR_PASSIVE
	atomic { /* step: clear-cas */
		if
		:: ((ps / HMOD) & ~1) == nx && word == (ps / HMOD) * HMOD + nx ->
			word = word & ~HMOD; goto unlocked
		:: else -> skip
		fi
	}
#else
	atomic { /* step: clear-cas */
		if
		:: ((ps / HMOD) & ~1) == nx && !pv && word == (ps / HMOD) * HMOD + nx ->
#ifdef FIX_REMARK
			word = word & ~HMOD; goto remark
#else
			word = word & ~HMOD; goto unlocked
#endif
		:: else -> skip
		fi
	}
#endif
#endif
	/* kick the holder of next, unless no ticket was queued and the gate
	 * has no active waiter (only an active waiter holds a ticket) */
	atomic {
		if
#ifdef MUT_KICK_QUEUED
		:: ((ps / HMOD) & ~1) != nx -> goto kicknext /* step: table-kick */
#else
		:: ((ps / HMOD) & ~1) != nx || gact != 0 -> goto kicknext
#endif
		:: else -> skip
		fi
	}
#ifdef FIX_REMARK
	goto kicked;
remark:
	/* the flag is cleared: look at the gate again, and if a passive
	 * waiter counted itself since the first look, its mark may be the
	 * flag just cleared: set it again and let the gate admit */
	atomic { pv = (gpas > 0 && !gx); if :: !pv -> goto unlocked :: else -> skip fi }
	word = word | HMOD;
#endif
kicked:
	/* Gate.Released if passive waiters wait: one load of the gate's
	 * state picks the case */
	atomic { /* step: unlock-gate */
		if
		:: !pv || gpas == 0 || gw || gx -> goto unlocked /* none, one on its way in, or a watcher */
		:: else -> skip
		fi;
		if
		:: gact == 0 -> fair = 0 /* drained */
		:: gact != 0 ->
			if
			:: fair = 1 /* the fairness bound */
			:: goto unlocked /* no clock look, or the bound has not passed */
			fi
		fi
	}
admit:
	/* Gate.admit: count the oldest out of the passive waiters and set W,
	 * then move the head past its ticket (whose waiter the kick that
	 * follows wakes) */
	atomic {
		if
		:: gpas > 0 && !gw && (fair || gact == 0) -> gpas--; gw = 1
		:: else -> goto admitted /* none left, one on its way, or not drained */
		fi
	}
	gadm = 1;
admitted:
	if
	:: rc == 1 -> atomic { rc = 0; fair = 0 } goto rechecked
	:: rc == 2 -> atomic { rc = 0; fair = 0 } goto watchlooked
	:: rc == 3 -> atomic { rc = 0; fair = 0 } goto passivehalt
	:: rc == 0 -> fair = 0; goto unlocked
	fi;

kicknext:
#ifdef MUT_WAKING_LATE
	table_kick(nx); /* step: table-kick */
	waking = nx | 1; /* step: waking-set */
#else
	waking = nx | 1; /* step: waking-set */
	table_kick(nx); /* step: table-kick */
#endif
	atomic { /* step: waking-undo */
		if
		:: !found && waking == (nx | 1) -> waking = 0
		:: else -> skip
		fi;
		found = 0
	}
	goto kicked;

unlocked:
	atomic { ps = 0; nx = 0; nf = 0; pv = 0 }
	rounds++;
	if
	:: ITER > 0 && rounds == ITER ->
		atomic {
			finished++;
			/* the hint does not outlive its use */
			assert(finished < NCPU || waking == 0)
		}
	:: else -> rounds = (ITER > 0 -> rounds : 0); goto again
	fi;
	goto end;

gotlock:
	/* Gate.Leave (deferred in lockContended), then the critical section */
	atomic { gact--; assert(incs == 0); incs++ }
	goto progress_cs;
cs:
	/* The critical section lasts until Unlock starts. */
	atomic { assert(incs == 0); incs++ }
progress_cs:
	goto unlock;

passive:
	/* Gate.wait, of a waiter that counted itself passive: the mark, the
	 * re-check of the lock (Gated.Free), then the halt until it is
	 * admitted */
#ifndef MUT_NO_MARK
	/* gated.MarkPassive: the slowpath flag, an atomic RMW, so that the
	 * releases run unlockSlow and look at the gate */
	word = word | HMOD; /* step: gate-set-flag */
#endif
	if
	:: (TAIL & ~1) == HEAD -> rc = 1; goto admit /* free: admit the oldest */
	:: else -> skip
	fi;
rechecked:
	if
	:: watching -> goto watchloop
	:: else -> skip
	fi;
passivehalt:
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
	goto queue;

watchloop:
	/* Gate.watch: X set, releases leave the gate alone. A look that finds
	 * the lock free admits the oldest; so does the fairness bound. */
	if
	:: gadm -> goto unwatch /* admitted */
	:: else -> skip
	fi;
	if /* the look */
	:: (TAIL & ~1) == HEAD -> rc = 2; goto admit
	:: else -> skip
	fi;
	if /* the fairness bound has passed, or not */
	:: rc = 2; fair = 1; goto admit
	:: skip
	fi;
watchlooked:
	if
	:: goto watchloop
	:: goto unwatch /* a sibling runnable, or the window */
	fi;
unwatch:
	/* Gate.unwatch: clear X, mark the lock again, re-check it */
	atomic { assert(gx && watching); gx = 0; watching = 0 }
#ifndef MUT_NO_WATCH_MARK
	word = word | HMOD;
#endif
	if
	:: (TAIL & ~1) == HEAD -> rc = 3; goto admit
	:: else -> goto passivehalt
	fi;
end:
	skip
}

/* No waiter sleeps for ever: whenever vCPU 0 is in FUTEX_WAIT, it later
 * leaves it. (All vCPUs run the same code from a symmetric start, so vCPU 0
 * stands for every vCPU.) Check with weak fairness: pan -a -f -N nohang. */
ltl nohang { [] (infutex[0] -> <> !infutex[0]) }

/* Every vCPU completes its ITER rounds (only meaningful with ITER > 0). */
ltl alldone { <> (finished == NCPU) }
