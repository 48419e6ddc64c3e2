package kick

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
)

// The waiter's state word. It is also the futex word of the futex backend.
//
//	from      to        by      meaning
//	idle      polling   waiter  Halt: about to poll (CAS, fails if kicked)
//	idle      sleeping  waiter  Halt: about to sleep (CAS, fails if kicked)
//	polling   sleeping  waiter  the poll ended without a kick (CAS)
//	idle      kicked    kicker  early kick: the token waits for the halt
//	polling   kicked    kicker  kick of a poller: token, no wake-up needed
//	sleeping  kicked    kicker  kick of a sleeper: token + wake-up
//	sleeping  idle      waiter  timeout or spurious return (CAS)
//	kicked    idle      waiter  token consumed (Halt returns Kicked)
//	any       idle      waiter  Arm, before the waiter is published
const (
	stateIdle     uint32 = 0
	stateSleeping uint32 = 1
	stateKicked   uint32 = 2
	statePolling  uint32 = 3
)

// Result says why Halt returned.
type Result uint8

const (
	// Kicked: a kick token was consumed (it may have arrived before Halt).
	Kicked Result = iota
	// Spurious: the waiter woke without a token (signal, stray futex wake).
	Spurious
	// TimedOut: the timeout expired without a token.
	TimedOut
)

// String returns the result's name: "kicked", "spurious" or "timed out".
func (r Result) String() string {
	switch r {
	case Kicked:
		return "kicked"
	case Spurious:
		return "spurious"
	case TimedOut:
		return "timed out"
	}
	return "unknown"
}

// Backend names how a Waiter sleeps.
type Backend uint8

const (
	// Futex: the thread blocks in FUTEX_WAIT on the waiter's word. Used for
	// waiters bound to pinned vCPU threads. Builds without futexes (off
	// Linux, or with the pvlock_portable tag) have no Futex waiters:
	// NewWaiter(Futex) returns a Park waiter there.
	Futex Backend = iota
	// Park: the goroutine parks on a channel; the thread stays free to run
	// other goroutines. Used for ordinary goroutines.
	Park
)

// String returns the backend's name.
func (b Backend) String() string {
	if b == Futex {
		return "futex"
	}
	return "park"
}

// Counters are a Waiter's lifetime event counts. Halts, spurious wake-ups
// and timeouts are written by the waiter itself; kicks received by kickers.
type Counters struct {
	Halts         uint64 // Halt calls that went to sleep
	EarlyKicks    uint64 // Halt calls that found the token already there
	KicksReceived uint64 // kicks that delivered a token to this waiter
	Spurious      uint64 // wake-ups without a token
	Timeouts      uint64 // halts that ended by timeout
	HaltedNanos   uint64 // total time spent halted (polling or asleep) in Halt

	// Halt-polling, in the terms of KVM's halt-poll statistics.
	PollsAttempted   uint64 // halts that began a poll
	PollsSuccessful  uint64 // polls that caught their kick
	PollsInvalid     uint64 // polls cut short because a sibling became runnable
	PollSuccessNanos uint64 // time spent in polls that caught their kick
	PollFailNanos    uint64 // time spent in polls that ended without one
	// PollWindowNanos is the waiter's current adaptive window (a gauge).
	PollWindowNanos uint64
	// MaxHaltNanos is the longest single halt (polling or asleep).
	MaxHaltNanos uint64
}

// HaltHook lets the owner of a Waiter track when it really sleeps. Halt
// calls Halting on the halting goroutine once it has committed to sleep (no
// kick token was pending) and before it sleeps, and Resumed on the same
// goroutine after the sleep ended, for whatever reason, before Halt returns.
// A Halt that consumes an early token calls neither. pvlock uses the hook to
// know which vCPUs are halted and to run work deferred to them on the way
// out, before the halting lock returns to its caller.
type HaltHook interface {
	Halting()
	Resumed()
}

// Waiter is a parking slot for one waiting goroutine. A Waiter is used by
// one waiter at a time; Kick may be called from any goroutine.
type Waiter struct {
	_     cpu.CacheLinePad
	state uint32 // futex word; see the table above
	// backend is fixed when the Waiter is created.
	backend Backend
	// pooled: the Waiter was made by Get's pool and Put returns it there.
	pooled bool
	// wake carries the wake-up of the Park backend. A kicker sends only
	// after it moved the state from sleeping to kicked, so at most one
	// token is ever in flight.
	wake  chan struct{}
	timer *time.Timer // the Park backend's halt timeout, reused

	// Slot is a small integer identifying the Waiter's owner for sharded
	// statistics (pvlock stores the vCPU's global index here). It is not
	// used by this package.
	Slot int
	// Hook, if set before the Waiter is first used, is told about each
	// real sleep (see HaltHook).
	Hook HaltHook

	domain atomic.Pointer[Domain] // see SetDomain
	pollNs atomic.Int64           // adaptive halt-poll window, ns

	// table linkage; guarded by the bucket lock of the table the Waiter
	// is published in.
	next, prev *Waiter
	key        uintptr
	tag        uint64
	bucket     *bucket

	halts, early, kicks, spurious, timeouts, haltedNanos              atomic.Uint64
	pollsAttempted, pollsOK, pollsInvalid, pollOKNanos, pollFailNanos atomic.Uint64
	maxHaltNanos                                                      atomic.Uint64 // written by the waiter only
	_                                                                 cpu.CacheLinePad
}

// NewWaiter returns an idle Waiter using the given backend. In a build
// without futexes (off Linux, or on Linux with the pvlock_portable tag) it
// uses Park for either backend: the waiter's goroutine parks on a channel,
// and a goroutine locked to its thread (a bound waiter's) takes its thread
// off the CPU with it, as a futex wait would. Backend reports the backend
// the Waiter really uses.
func NewWaiter(b Backend) *Waiter {
	if b == Futex && !haveFutex {
		b = Park
	}
	w := &Waiter{backend: b}
	if b == Park {
		w.wake = make(chan struct{}, 1)
	}
	return w
}

// Backend reports how the Waiter sleeps.
func (w *Waiter) Backend() Backend { return w.backend }

// Arm clears any token left by an earlier kick. Call it before the Waiter
// is published to kickers: arming after publishing could erase a kick that
// arrived in between, and the waiter would sleep through its turn.
func (w *Waiter) Arm() {
	// step: waiter-arm
	atomic.StoreUint32(&w.state, stateIdle)
}

// SetDomain makes w a halt-polling waiter of d (nil: never poll). Set it
// while w is not halted; the owner of w also counts w's thread into d with
// Enter and Leave while it runs.
func (w *Waiter) SetDomain(d *Domain) { w.domain.Store(d) }

// Domain returns the waiter's halt-polling domain, or nil.
func (w *Waiter) Domain() *Domain { return w.domain.Load() }

// Kicked reports whether a kick token is pending.
func (w *Waiter) Kicked() bool {
	return atomic.LoadUint32(&w.state) == stateKicked
}

// Halt sleeps until the Waiter is kicked, the timeout (if > 0) expires, or
// the sleep ends spuriously. A kick that arrived after Arm and before Halt
// makes Halt return Kicked at once: the token is sticky. A waiter with a
// Domain first halt-polls (see SetHaltPoll) while the domain has an idle
// CPU.
func (w *Waiter) Halt(timeout time.Duration) Result { return w.halt(timeout, true) }

// Sleep is Halt without halt-polling, for halts that expect no kick soon
// (an idle vCPU waiting for its timer).
func (w *Waiter) Sleep(timeout time.Duration) Result { return w.halt(timeout, false) }

func (w *Waiter) halt(timeout time.Duration, mayPoll bool) Result {
	d := w.domain.Load()
	var window int64
	if mayPoll && d != nil {
		window = w.pollWindow()
		if timeout > 0 {
			window = min(window, int64(timeout)) // the watchdog bounds polls too
		}
	}
	first := stateSleeping
	if window > 0 {
		first = statePolling
	}
	// The CAS fails only if a kicker already left its token: consume it.
	// step: waiter-halt-cas
	if !atomic.CompareAndSwapUint32(&w.state, stateIdle, first) {
		atomic.StoreUint32(&w.state, stateIdle)
		w.early.Add(1)
		return Kicked
	}
	if d != nil {
		d.runnable.Add(-1) // halted: put back by our kicker, or below
	}
	w.halts.Add(1)
	if w.Hook != nil {
		w.Hook.Halting()
	}
	start := time.Now()
	r, polled := w.pollThenSleep(d, first, window, start, timeout)
	blocked := int64(time.Since(start))
	w.haltedNanos.Add(uint64(blocked))
	if uint64(blocked) > w.maxHaltNanos.Load() {
		w.maxHaltNanos.Store(uint64(blocked))
	}
	if polled {
		w.adapt(window, blocked)
	} else if mayPoll && d != nil && window == 0 {
		w.adapt(0, blocked) // a zero window still learns when to open
	}
	if r != Kicked && d != nil {
		d.runnable.Add(1) // no kicker put us back
	}
	if w.Hook != nil {
		w.Hook.Resumed()
	}
	switch r {
	case Spurious:
		w.spurious.Add(1)
	case TimedOut:
		w.timeouts.Add(1)
	}
	return r
}

// pollThenSleep is the body of a halt that has left idle for first. It
// reports how the halt ended and whether a valid poll (one not cut short by
// a runnable sibling) ran, which is what the adaptive window learns from.
func (w *Waiter) pollThenSleep(d *Domain, first uint32, window int64, start time.Time, timeout time.Duration) (Result, bool) {
	if first == statePolling {
		valid := false
		if d.Idle() {
			w.pollsAttempted.Add(1)
			kicked, invalid := w.poll(d, start, window)
			spent := uint64(time.Since(start))
			switch {
			case kicked:
				atomic.StoreUint32(&w.state, stateIdle)
				w.pollsOK.Add(1)
				w.pollOKNanos.Add(spent)
				return Kicked, true
			case invalid:
				w.pollsInvalid.Add(1)
				w.pollFailNanos.Add(spent)
			default:
				w.pollFailNanos.Add(spent)
				valid = true
			}
		}
		// Commit to sleeping. A kicker that swapped polling -> kicked sent
		// no futex wake (a poller needs none), so the token must be found
		// here: the CAS fails exactly when a kick landed during the poll,
		// and then we take the token instead of sleeping past it. A kick
		// after the CAS sees sleeping and wakes us.
		if !atomic.CompareAndSwapUint32(&w.state, statePolling, stateSleeping) {
			atomic.StoreUint32(&w.state, stateIdle)
			return Kicked, valid
		}
		if timeout > 0 {
			if timeout -= time.Since(start); timeout <= 0 {
				timeout = 1 // the poll used it up: the sleep times out at once
			}
		}
		return w.sleep(timeout), valid
	}
	return w.sleep(timeout), false
}

func (w *Waiter) sleep(timeout time.Duration) Result {
	if w.backend == Futex {
		return w.sleepFutex(timeout)
	}
	return w.sleepPark(timeout)
}

func (w *Waiter) sleepFutex(timeout time.Duration) Result {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		// The expected value closes the race with a kick landing between
		// the CAS above and the sleep: the kernel re-reads the word under
		// its own lock and returns EAGAIN if the kicker changed it.
		// step: waiter-sleep
		err := futexWait(&w.state, stateSleeping, timeout)
		if atomic.LoadUint32(&w.state) == stateKicked {
			atomic.StoreUint32(&w.state, stateIdle)
			return Kicked
		}
		timedOut := false
		if timeout > 0 {
			timeout = time.Until(deadline)
			timedOut = timeout <= 0
		}
		if err == nil || timedOut {
			// Woken without a token, or out of time: go back to idle,
			// unless a kick wins the race for the word.
			if atomic.CompareAndSwapUint32(&w.state, stateSleeping, stateIdle) {
				if timedOut {
					return TimedOut
				}
				return Spurious
			}
			atomic.StoreUint32(&w.state, stateIdle)
			return Kicked
		}
		// EINTR (a signal such as the runtime's preemption SIGURG) or
		// EAGAIN without a token: sleep again for the time left.
	}
}

func (w *Waiter) sleepPark(timeout time.Duration) Result {
	if timeout <= 0 {
		<-w.wake
		atomic.StoreUint32(&w.state, stateIdle)
		return Kicked
	}
	// One timer per waiter, reset for each halt: a halt allocates nothing.
	// Since Go 1.23 a stopped or reset timer delivers no stale value.
	if w.timer == nil {
		w.timer = time.NewTimer(timeout)
	} else {
		w.timer.Reset(timeout)
	}
	t := w.timer
	defer t.Stop()
	select {
	case <-w.wake:
		atomic.StoreUint32(&w.state, stateIdle)
		return Kicked
	case <-t.C:
	}
	if atomic.CompareAndSwapUint32(&w.state, stateSleeping, stateIdle) {
		return TimedOut
	}
	// A kicker took the word from sleeping to kicked just as the timer
	// fired; it is committed to sending, so wait for its token here
	// rather than leave it to wake a later, unrelated halt.
	<-w.wake
	atomic.StoreUint32(&w.state, stateIdle)
	return Kicked
}

// Kick delivers a token to the Waiter and wakes it if it sleeps. It reports
// whether a token was delivered (false if one was already pending).
func (w *Waiter) Kick() bool {
	delivered, _ := w.kick()
	return delivered
}

// KickWaking is Kick that also reports whether the waiter was asleep, so
// that its wake-up is still to come (a waiter that was polling, or had not
// halted yet, runs already).
func (w *Waiter) KickWaking() (delivered, asleep bool) { return w.kick() }

func (w *Waiter) kick() (delivered, asleep bool) {
	// step: waiter-kick
	// Put the waiter back among its domain's runnable waiters before the
	// token can wake it, so that a sibling polling on its CPU gives way
	// now, and so that the waiter, once it runs, never finds itself
	// uncounted. Whether it was halted is known only from the swap, so the
	// count is raised first and lowered again if it was not: for a moment
	// it may count one waiter too many, which only makes a poller give up
	// early, never one too few.
	d := w.domain.Load()
	if d != nil {
		d.runnable.Add(1)
	}
	old := atomic.SwapUint32(&w.state, stateKicked)
	if d != nil && old != stateSleeping && old != statePolling {
		d.runnable.Add(-1) // not halted: it counts itself
	}
	if old == stateKicked {
		return false, false
	}
	w.kicks.Add(1)
	if old == stateSleeping {
		// Only a sleeper needs the expensive wake; an idle or polling
		// waiter will find the token in its state word.
		if w.backend == Futex {
			futexWake(&w.state, 1)
		} else {
			w.wake <- struct{}{}
		}
	}
	return true, old == stateSleeping
}

// Counters returns the Waiter's event counts.
func (w *Waiter) Counters() Counters {
	return Counters{
		Halts:         w.halts.Load(),
		EarlyKicks:    w.early.Load(),
		KicksReceived: w.kicks.Load(),
		Spurious:      w.spurious.Load(),
		Timeouts:      w.timeouts.Load(),
		HaltedNanos:   w.haltedNanos.Load(),

		PollsAttempted:   w.pollsAttempted.Load(),
		PollsSuccessful:  w.pollsOK.Load(),
		PollsInvalid:     w.pollsInvalid.Load(),
		PollSuccessNanos: w.pollOKNanos.Load(),
		PollFailNanos:    w.pollFailNanos.Load(),
		PollWindowNanos:  uint64(w.pollNs.Load()),
		MaxHaltNanos:     w.maxHaltNanos.Load(),
	}
}

// ResetCounters zeroes the Waiter's event counts.
func (w *Waiter) ResetCounters() {
	for _, c := range [...]*atomic.Uint64{
		&w.halts, &w.early, &w.kicks, &w.spurious, &w.timeouts, &w.haltedNanos,
		&w.pollsAttempted, &w.pollsOK, &w.pollsInvalid, &w.pollOKNanos, &w.pollFailNanos,
		&w.maxHaltNanos,
	} {
		c.Store(0)
	}
}
