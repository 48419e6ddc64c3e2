/*
 * gate.pml -- the concurrency restriction of package lockcore
 * (internal/lockcore/gate.go) with its halt/kick layer (kick/waiter.go,
 * kick/table.go), in front of an abstract lock.
 *
 * NCPU goroutines each loop: Lock, critical section, Unlock -- ITER times,
 * or for ever when ITER is 0. Every step of the gate whose order matters
 * is its own atomic step here, in program order, and steps interleave
 * sequentially consistently, as Go's sync/atomic operations do. A load
 * followed by a CAS of the word it loaded is one step (a failed CAS
 * retries with a fresh load, which is another interleaving of the same
 * step). Each step is marked "step: <name>"; the same names mark the Go
 * code, in the same order, and TestModelSteps checks that the two lists
 * agree.
 *
 * The lock is reduced to what the gate needs of it: a word that is free
 * or held, taken by a CAS of a free word and released by an atomic RMW
 * (Gated.Free is a load of it). A locker first tries the lock's fast
 * path (qspin: fast-cas; ticket: take-ticket), then passes the
 * gate. An active waiter stands for the lock's own slow path, which the
 * lock models check (its halts and kicks among them): it polls the word
 * and takes it when it is free, and it may poll for ever. As qspin's
 * admitted spinner (contend) it may also give up after a failed poll and
 * wait outside again (Demote). The holder leaves the active set before
 * its critical section. Every release looks at the gate after it (qspin:
 * unlock-fast, then unlock-gate-check and unlock-gate); the ticket lock's
 * releases look only when its word is marked, which ticket.pml models.
 *
 *   gate state   gact (active waiters), gw (the woken bit W: an admitted
 *                waiter is on its way in), gx (the watching bit X: the
 *                oldest passive waiter watches the lock, and releases
 *                leave the gate alone), gc (the cull bit C:
 *                the admission's swap; a waiter that finds room in the
 *                active set and C set goes passive and clears C if it is
 *                a vCPU, a free choice here, and enters if it is a
 *                goroutine), gpas (passive
 *                waiters): the fields of the Go state word; a step that
 *                CASes the word changes them in one step. Only the waiter
 *                that set X clears it
 *   tickets      ghead, gtail: the passive tickets, modulo TMOD = 4;
 *                pt[i]: goroutine i's ticket (NONE: it holds none).
 *                Go's admitted(p), int32(head - p) > 0, holds once the
 *                head has passed p, for the next 2^31 tickets: padm[i]
 *                records it, set when the head moves past pt[i]. The
 *                head may also pass a ticket nobody has taken yet (the
 *                admission counts out a passive waiter, which takes its
 *                ticket later): gpassed counts those, and the next
 *                ticket taken is admitted at once. The tickets only tell
 *                the waiters apart: those not yet admitted hold distinct
 *                tickets, fewer than NCPU + 1 = TMOD
 *   kick.Table   pub[i]: goroutine i is published under ticket pt[i].
 *                Publish, Withdraw and KickWaiter each hold the bucket
 *                mutex, so each is one atomic step here. KickWaiter finds
 *                the waiter published under exactly the old head: the
 *                admitter remembers whose ticket its head move passed
 *                (hk), as Go's 32-bit tickets tell waiters apart that the
 *                model's would not
 *   kick.Waiter  wstate[] (IDLE, SLEEPING, KICKED): the futex word, whose
 *                KICKED is the sticky token; infutex[i]: goroutine i is
 *                blocked in FUTEX_WAIT (as in ticket.pml)
 *
 * The cap of active waiters is CAP, 1 by default: a goroutine's cap (as
 * Go's single spinner). The fairness bound is a free choice at each
 * release that finds active waiters: the bound may have passed or not,
 * and the release may look at the clock or not; it may never fire. So
 * alldone below shows that the drained admission alone lets every waiter
 * in once the contention ends. A deep queue (Go: deepPassive waiters
 * outside) is a free choice too, wherever passive waiters exist: a
 * release that finds W set may admit by the bound all the same (the
 * stacked admission), which leaves W set and counts its waiter in gstk;
 * an admitted waiter that finds a count takes it instead of clearing W.
 * -DSTACK=0 leaves the stacked admissions out, for a smaller state space
 * (alldone with two rounds: 13.9M states, against 37.7M with them).
 * The end of a vCPU's turn on a deep queue (Gate.turnOver: it has run
 * turnCPU since its last passive wait) is a free choice too, wherever
 * passive waiters exist: a waiter with room in the active set may go
 * outside all the same (gate-turn), leaving C as it is.
 * Gated.Free's freePolls polls (a watcher's watchFreePolls) are one poll
 * here: a run of polls that all find the lock free ends as one poll at the
 * last of them, and a run that finds it held as one poll at that moment.
 *
 * Watching (Gate.watch) is the passive wait of a waiter whose CPU would
 * idle otherwise; whether a waiter may watch (canWatch: halt-polling on,
 * and a vCPU with no runnable sibling or a goroutine of a program with no
 * more Ps than CPUs that did not enter passive) is a free choice at each
 * place the code asks, and so
 * are the end of a watch (a sibling became runnable, or no look found the
 * lock free for the window) and the watcher's own fair admission (the
 * bound has passed): a watcher may also watch for ever. Its looks at the
 * lock are one poll each, as stillFree's are. While X is set, releases do
 * not look at the gate (Waiting), and the lock's mark is a no-op here:
 * the abstract lock's releases always look (ticket.pml checks the mark
 * that the watcher sets again as it clears X).
 *
 * The model has no spurious wake-ups and no halt timeout: a waiter leaves
 * a halt only because it was kicked, so the liveness checks show that
 * kicks alone suffice (the Go timeout is a safety net).
 *
 * Properties: the assertions (mutual exclusion; a halt ends only with a
 * kick token; X is cleared only by the waiter that set it, and only
 * while set), no invalid end state, and the ltl formulas at the end:
 * alldone (with ITER > 0, every goroutine finishes: no waiter stays
 * passive for ever) and nolost (a halted passive waiter whose ticket has
 * been admitted is kicked). The admitted waiter's add of 1 - W is the Go
 * add: if W is not set, it borrows from the passive count.
 *
 * Mutants (spin -DMUT_xxx), each breaking one step; each must make spin
 * report an error:
 *   NO_RECHECK     gate-recheck: the passive waiter halts without
 *                  re-checking the lock: the release that freed it looked
 *                  at the gate before the waiter counted itself.
 *   LOOK_FIRST     gate-admit-drained: the release looks at the gate
 *                  before it releases the lock, so a waiter that counts
 *                  itself in between finds the lock still held, halts,
 *                  and the release never admits it.
 *   NO_DRAIN       gate-admit-drained: a release that finds no active
 *                  waiter admits nobody (only the fairness bound does).
 *   ARMLATE        gate-arm: the waiter arms after its admitted check,
 *                  just before it halts, erasing a kick that came in
 *                  between.
 *   KICK_FIRST     gate-head: the admitter kicks the waiter of the head
 *                  ticket before it moves the head past it.
 *   NO_CLEAR_W     gate-active: the admitted waiter counts itself active
 *                  but leaves W set.
 *   ADMIT_WOKEN    gate-admit: the admission ignores W: a second waiter
 *                  can be admitted while the first is on its way.
 *   NO_STACK_COUNT gate-stack: a stacked admission does not count its
 *                  waiter, so the first of two admitted waiters to arrive
 *                  clears W while the other is still on its way.
 *   NO_WATCH_DROP  gate-watch-drop: a waiter that set X as it counted
 *                  itself, and was admitted before it watched, keeps X:
 *                  releases go on admitting nobody.
 *   NO_WATCH_RECHECK  gate-watch-recheck: the watcher clears X and halts
 *                  without looking at the lock: a release X turned away
 *                  was the last one.
 *   NO_WATCH_ADMIT gate-watch-admit: the watcher's look never lets it in:
 *                  while it watches, nobody admits it.
 *   CULL_STALE     gate-admit: the admission sets C even when it leaves
 *                  nobody outside, so a vCPU that finds room and the lock
 *                  about to be free is culled with no one ahead of it
 *                  whose release would admit it (the assertion at
 *                  gate-cull; only its own re-check would save it).
 * One reordering is harmless and must verify (spin -DALT_xxx):
 *   ARM_AFTER_PUBLISH  publish, then arm, then re-check: the admitter moves
 *                  the head before it kicks, and the waiter looks at the
 *                  head after arming, so a kick the arm erases belongs to
 *                  an admission the waiter sees.
 */

#ifndef NCPU
#define NCPU 3
#endif
#ifndef ITER
#define ITER 0 /* lock/unlock rounds per goroutine; 0 = for ever */
#endif
#ifndef CAP
#define CAP 1 /* the cap of active waiters */
#endif
#ifndef STACK
#define STACK 1 /* 0: no queue is deep, so no admission stacks */
#endif

/* passive tickets modulo TMOD: more than the waiters not yet admitted */
#ifndef TMOD
#if NCPU > 3
#define TMOD 8
#else
#define TMOD 4
#endif
#endif
#define NONE 255

#define IDLE     0
#define SLEEPING 1
#define KICKED   2

/* the lock word */
bit held;

/* the gate */
byte gact;  /* active waiters */
bit gw;     /* W: an admitted waiter is on its way in */
bit gx;     /* X: the oldest passive waiter watches the lock */
bit gc;     /* C: an admission's swap: the next vCPU with room goes passive */
byte gstk;  /* stacked: admitted past W, not yet active (Gate.stacked) */
byte gxo = NONE; /* observer: the waiter that set X */
byte gpas;  /* passive waiters */
byte ghead; /* the next passive ticket to admit */
byte gpassed; /* tickets the head passed before anyone took them */
byte gtail; /* the next passive ticket to hand out */

/* the passive waiters' tickets and admissions; passiveWaiters, the
 * gate's kick.Table */
byte pt[NCPU] = NONE;
bit padm[NCPU];
bit pub[NCPU];

/* the waiters */
byte wstate[NCPU];
bit infutex[NCPU];

/* observers */
byte incs;     /* goroutines in the critical section */
byte finished; /* goroutines that did all their rounds */

/* ---- kick/waiter.go ---- */

/* Waiter.Arm: clear any old token. */
inline waiter_arm() {
	wstate[me] = IDLE /* step: waiter-arm */
}

/* Waiter.Halt with the futex backend, as in ticket.pml: the CAS
 * idle -> sleeping and the FUTEX_WAIT with its expected value act as one
 * step. Leaving consumes the token; the Withdraw that follows in
 * Gate.wait, after one more load of the head, is merged into it: nobody
 * else kicks this ticket in between. */
inline waiter_halt() {
	atomic { /* step: waiter-halt-cas */
		if
		:: wstate[me] == IDLE -> wstate[me] = SLEEPING; infutex[me] = 1 /* step: waiter-sleep */
		:: else -> skip /* the token is already here: do not sleep */
		fi
	}
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

/* ---- internal/lockcore/gate.go ---- */

/* Table.KickWaiter(gate, h): kick the waiter published under ticket h,
 * if any: hk, the waiter whose ticket the head move passed, if it holds
 * it and is published by now (else nobody: one that takes or publishes
 * it later finds itself admitted before it halts). */
inline table_kick() {
	atomic {
		if
		:: hk != NONE && !(rc != 0 && hk == me) && pub[hk] && pt[hk] == h && padm[hk] -> waiter_kick(hk)
		:: else -> skip
		fi;
		hk = NONE
	}
}

/* head.Add(1): the head passes ticket h, which a waiter not yet admitted
 * may hold */
inline move_head() {
	atomic {
		h = ghead; ghead = (ghead + 1) % TMOD;
		for (k : 0 .. NCPU - 1) {
			if
			:: pt[k] == h && !padm[k] ->
				assert(hk == NONE); /* one waiter not yet admitted holds it */
				padm[k] = 1; hk = k
			:: else -> skip
			fi
		}
		if
		:: hk == NONE -> gpassed++ /* nobody has taken it yet */
		:: else -> skip
		fi;
		k = 0
	}
}

/* Gate.admit's C: set while passive waiters remain, if fewer than
 * cullMaxPassive do, and unless the admission is a release's whose waiter
 * sleeps beside it on a lock with work outside (Gate.besideReleaser,
 * Gate.workOutside): a free choice here. Cleared otherwise. Leaving C
 * clear is always one of the choices, so the policy adds no behaviour the
 * model does not check. */
inline set_cull() {
	if
#ifdef MUT_CULL_STALE
	:: gc = 1
#else
	:: gpas > 0 -> gc = 1
#endif
	:: gc = 0
	fi
}

/* Gate.firstWatch, in the CAS that counts the caller passive: the first
 * passive waiter may set X at once (canWatch is a free choice). */
inline first_watch() {
	if
	:: gpas == 0 && !gx -> watching = 1; gx = 1; gxo = me
	:: else -> skip
	fi
}

/* The end of a round. */
inline round_done() {
	rounds++;
	if
	:: ITER > 0 && rounds == ITER -> finished++; goto end
	:: else -> rounds = (ITER > 0 -> rounds : 0)
	fi
}

/* The steps of gate.go are laid out in its order; the goroutine jumps
 * between them as the calls do (rc says where admit returns to). */
active [NCPU] proctype g() {
	byte me = _pid;
	byte k;      /* scratch */
	byte h;      /* admit: the ticket it admits */
	byte hk = NONE; /* admit: the waiter that holds it, if any */
	bit fair;    /* admit: by the fairness bound */
	byte rc;     /* who called admit: 0 a release, 1 the re-check, 2 a
	              * watcher's look, 3 unwatch, 4 the watcher's fair
	              * admission */
	bit watching; /* we set X as we counted ourselves passive */
	bit stk;     /* admit: the admission stacks (a deep queue, W set) */
	bit tok;     /* becomeActive: we took a stacked count */
	byte rounds;

again:
	/* the lock's fast path: a CAS of a free word */
	atomic {
		if
		:: !held -> held = 1; goto cs
		:: else -> skip
		fi
	}
	/* Gate.Enter: active if the active set has room, else passive (the
	 * CAS that counts us as one or the other) */
	atomic { /* step: gate-enter */
		if
		:: gact < CAP -> gact++; goto spin /* a goroutine pays no heed to C */
		:: gact < CAP && gpas > 0 -> /* step: gate-turn */
			/* a vCPU whose turn on a deep queue is over goes outside
			 * with room, leaving C as it is: a free choice wherever
			 * others wait outside. The re-check (gate-recheck, mutant
			 * NO_RECHECK) is what keeps it from being passed by:
			 * alldone verifies with the guard gpas > 0 left out too
			 * (15.2M states), so the guard is the policy's, and the step
			 * closes no race of its own and has no mutant. */
			first_watch(); gpas++
		:: gact < CAP && gc -> /* step: gate-cull */
			/* C only while others wait outside: each of them takes the
			 * lock in turn, and its release sees us */
			assert(gpas > 0);
			gc = 0; first_watch(); gpas++
		:: else -> first_watch(); gpas++
		fi
	}
	goto wait;

gotlock:
	/* Gate.Leave: we hold the lock; then the critical section */
	atomic { gact--; /* step: gate-leave */ assert(incs == 0); incs++ }
	goto crit;

demote:
	/* Gate.Demote: from active to passive, one atomic add */
	atomic { gact--; first_watch(); gpas++ } /* step: gate-demote */

wait:
	/* Gate.wait */
	atomic { /* step: gate-ticket */
		pt[me] = gtail; gtail = (gtail + 1) % TMOD;
		if
		:: gpassed > 0 -> gpassed--; padm[me] = 1 /* the head is past it */
		:: else -> skip
		fi
	}
	/* Gated.MarkPassive: a lock whose every release looks at the gate
	 * does nothing */
	skip; /* step: gate-mark */
waitloop:
#ifdef ALT_ARM_AFTER_PUBLISH
	atomic { pub[me] = 1 } /* step: gate-publish */
	waiter_arm(); /* step: gate-arm */
#elif defined(MUT_ARMLATE)
	atomic { pub[me] = 1 } /* step: gate-publish */
#else
	/* Arm, then Publish: nobody kicks an unpublished waiter, so the two
	 * are one step */
	atomic {
		waiter_arm(); /* step: gate-arm */
		pub[me] = 1 /* step: gate-publish */
	}
#endif
#ifndef MUT_NO_RECHECK
	/* stillFree: a free lock may have nobody left to release it after
	 * our count: admit the oldest passive waiter ourselves */
	if /* step: gate-recheck */
	:: !held -> rc = 1; goto admit
	:: else -> skip
	fi;
#endif
rechecked:
	if /* step: gate-admitted */
	:: padm[me] -> goto admitted
	:: else -> skip
	fi;
	if /* step: gate-watch */
	:: watching -> watching = 0; goto watchhead
	:: !watching -> goto watch /* canWatch */
	:: !watching -> skip /* a goroutine, a runnable sibling, polling off */
	fi;
halt:
#ifdef MUT_ARMLATE
	waiter_arm(); /* step: gate-arm */
#endif
	waiter_halt(); /* step: gate-halt */
	if
	:: padm[me] -> goto admitted
	:: else -> goto waitloop /* a kick of a ticket an earlier lap held */
	fi;
admitted:
	/* A waiter that set X as it counted itself and is admitted before it
	 * watched (its ticket passed by an admission whose CAS came before
	 * its count) takes X back */
	if /* step: gate-watch-drop */
#ifndef MUT_NO_WATCH_DROP
	:: watching -> watching = 0; goto unwatch
#endif
	:: else -> watching = 0
	fi;
	/* the Withdraw after the loop. A token a kick left here is dead (the
	 * next Arm clears it; no kicker looks at an unpublished waiter), so
	 * the model clears it now. */
	atomic { pub[me] = 0; wstate[me] = IDLE; pt[me] = NONE; padm[me] = 0 }
	/* Gate.becomeActive: take a stacked count if there is one, else
	 * clear W; then count ourselves active */
	atomic { /* step: gate-token */
		if
		:: gstk > 0 -> gstk--; tok = 1
		:: else -> skip
		fi
	}
	/* add 1, or 1 - W, to the state word */
	atomic { /* step: gate-active */
		if
		:: tok -> tok = 0 /* W stays for the others on their way in */
		:: else ->
			skip;
#ifndef MUT_NO_CLEAR_W
			if
			:: gw -> gw = 0
			:: else -> gw = 1; gpas-- /* the borrow of the Go add */
			fi;
#endif
		fi;
		gact++
	}
	goto spin;

watch:
	/* Gate.watch without X: set it, if no one else watches */
	atomic { /* step: gate-watch-set */
		if
		:: !gx && !gw && gpas > 0 -> gx = 1; gxo = me
		:: else -> goto halt
		fi
	}
watchhead:
	/* only the head watches: X belongs to the head ticket */
	if
	:: pt[me] == ghead && !padm[me] -> skip
	:: else -> goto unwatch
	fi;
watchloop:
	if
	:: padm[me] -> goto unwatch /* X may be ours still: see admitted */
	:: else -> skip
	fi;
	if /* step: gate-watch-look */
	:: !held ->
#ifndef MUT_NO_WATCH_ADMIT
		rc = 2; goto admit /* step: gate-watch-admit */
#else
		skip /* step: gate-watch-admit */
#endif
	:: else -> skip
	fi;
watchlooked:
	if
	:: padm[me] -> goto unwatch
	:: else -> skip
	fi;
	/* X turns the releases away: the watcher admits itself by the
	 * fairness bound */
	if /* step: gate-watch-fair */
	:: rc = 4; fair = 1; goto admit /* nobody admitted for FairBound */
	:: skip
	fi;
watchfaired:
	if
	:: padm[me] -> goto unwatch
	:: goto watchloop
	:: goto unwatch /* a sibling runnable, or the window without a free look */
	fi;
unwatch:
	atomic { assert(gx && gxo == me); gx = 0; gxo = NONE } /* step: gate-watch-clear */
	/* Gated.MarkPassive again: a no-op for a lock whose every release
	 * looks at the gate (ticket.pml checks the ticket lock's mark) */
	skip; /* step: gate-watch-mark */
#ifndef MUT_NO_WATCH_RECHECK
	if /* step: gate-watch-recheck */
	:: !held -> rc = 3; goto admit
	:: else -> skip
	fi;
#endif
unwatched:
	if
	:: padm[me] -> goto admitted
	:: else -> goto halt
	fi;

released:
	/* Gate.Released, by a release that found passive waiters and no
	 * watcher (Waiting) after the release: one load of the state picks
	 * the case */
	atomic {
		if
		:: gpas == 0 || gx || !STACK && gw -> goto unlocked /* none, a watcher, or one on its way */
		:: STACK && gpas > 0 && !gx && gw ->
			/* one on its way in: admit nobody, unless the queue is deep
			 * and the bound has passed */
			if
			:: fair = 1; goto admit /* step: gate-admit-deep */
			:: goto unlocked
			fi
		:: else -> skip
		fi;
		if
#ifdef MUT_NO_DRAIN
		:: gact == 0 -> goto unlocked /* step: gate-admit-drained */
#else
		:: gact == 0 -> fair = 0 /* step: gate-admit-drained */
#endif
		:: gact != 0 ->
			if
			:: fair = 1 /* step: gate-admit-fair */
			:: goto unlocked /* no clock look, or the bound has not passed */
			fi
		fi
	}

admit:
	/* Gate.admit: count the oldest out of the passive waiters and set W
	 * (the CAS), move the head past its ticket, kick it */
	atomic { /* step: gate-admit */
		if
#ifdef MUT_ADMIT_WOKEN
		:: gpas > 0 && (fair || gact == 0) -> gpas--; gw = 1; set_cull()
#else
		:: gpas > 0 && !gw && (fair || gact == 0) -> gpas--; gw = 1; set_cull()
#endif
		/* a fair admission on a deep queue stacks: W stays, no C */
		:: STACK && gpas > 0 && gw && fair -> gpas--; stk = 1; gc = 0
		:: else -> goto admitdone /* none left, one on its way, or not drained */
		fi
	}
	/* the count of the stacked waiter, before the head moves past it */
	if /* step: gate-stack */
	:: stk ->
		stk = 0;
#ifndef MUT_NO_STACK_COUNT
		gstk++
#else
		skip
#endif
	:: else -> skip
	fi;
#ifdef MUT_KICK_FIRST
	/* the kick of the waiter of the head ticket, not yet admitted */
	atomic {
		for (k : 0 .. NCPU - 1) {
			if
			:: pub[k] && pt[k] == ghead && !padm[k] -> waiter_kick(k)
			:: else -> skip
			fi
		}
		k = 0
	}
	move_head(); /* step: gate-head */
	hk = NONE;
#else
	move_head(); /* step: gate-head */
	table_kick(); /* step: gate-kick */
#endif
admitdone:
	if
	:: rc == 1 -> atomic { rc = 0; fair = 0; h = 0 } goto rechecked
	:: rc == 2 -> atomic { rc = 0; fair = 0; h = 0 } goto watchlooked
	:: rc == 3 -> atomic { rc = 0; fair = 0; h = 0 } goto unwatched
	:: rc == 4 -> atomic { rc = 0; fair = 0; h = 0 } goto watchfaired
	:: rc == 0 -> atomic { fair = 0; h = 0 } goto unlocked
	fi;

spin:
	/* an active waiter: the lock's slow path, abstracted. It takes a
	 * free word; while the word is held it polls on (for ever, if need
	 * be), or, as qspin's admitted spinner after a failed poll, waits
	 * outside again. */
	do
	:: atomic { !held -> held = 1 } goto gotlock
	:: held -> skip
	:: held -> goto demote
	od;

cs:
	atomic { assert(incs == 0); incs++ }
crit:
#ifdef MUT_LOOK_FIRST
	/* the look at the gate before the release */
	atomic { incs--; rc = (gpas > 0 && !gx) }
	held = 0;
	if
	:: rc -> rc = 0; goto released
	:: else -> skip
	fi;
#else
	/* the release, an atomic RMW */
	atomic { incs--; held = 0 }
	/* then the look at the gate (Waiting) */
	atomic {
		if
		:: gpas > 0 && !gx -> goto released
		:: else -> round_done()
		fi
	}
	goto again;
#endif
unlocked:
	atomic { round_done() }
	goto again;
end:
	skip
}

/* Every goroutine completes its ITER rounds (only meaningful with
 * ITER > 0): no waiter stays passive for ever. Check with weak fairness:
 * pan -a -f -N alldone. */
ltl alldone { <> (finished == NCPU) }

/* No lost wake-up: whenever goroutine 0 sleeps published under a ticket
 * that has been admitted, it later wakes. (All goroutines run the same
 * code from a symmetric start, so goroutine 0 stands for every one.)
 * Check with weak fairness: pan -a -f -N nolost. */
ltl nolost { [] ((infutex[0] && pub[0] && padm[0]) -> <> !infutex[0]) }
