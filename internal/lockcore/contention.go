package lockcore

import (
	"math/rand/v2"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// The contention profile and the lockup detector watch the locks' slow
// paths, and only those. A lock's slow-path entry brackets the whole wait
// (the gate, spinning and halting) with ContentionStart and ContentionEnd:
//
//	defer lockcore.ContentionEnd(lockcore.ContentionStart(l, l.stats()))
//
// While both are off, which is the default, ContentionStart is one atomic
// load and ContentionEnd a test of its result; the fast paths never call
// either.

// armed says which of the two watchers is on: the one word the slow-path
// entry loads.
var armed atomic.Uint32

const (
	armProfile uint32 = 1 << iota // the contention profile samples
	armLockup                     // the lockup detector tracks waits
)

// setArmed sets or clears bit in armed.
func setArmed(bit uint32, on bool) {
	if on {
		armed.Or(bit)
	} else {
		armed.And(^bit)
	}
}

// Wait is one slow-path wait, as ContentionStart began it and
// ContentionEnd ends it. The zero Wait is a wait nobody watches.
type Wait struct {
	start  int64       // Now() at the slow-path entry; 0: not watched
	sample bool        // the contention profile samples this wait
	rec    *waitRecord // the lockup detector's record of it, or nil
}

// ContentionStart begins the watch of a slow-path wait for lock l, whose
// statistics are st: a lock package's slow-path entry calls it, and hands
// the result to ContentionEnd once it holds the lock. With the contention
// profile and the lockup detector off it is one atomic load.
func ContentionStart[L any](l *L, st *Stats) Wait {
	if a := armed.Load(); a != 0 {
		return contentionStart(Key(l), st, a)
	}
	return Wait{}
}

// contentionStart is the rest of ContentionStart: a sampling decision,
// and a record for the lockup detector.
func contentionStart(lock uintptr, st *Stats, a uint32) Wait {
	var w Wait
	if a&armProfile != 0 {
		if rate := contentionRate.Load(); rate == 1 || rate > 1 && rand.Int64N(rate) == 0 {
			w.sample = true
		}
	}
	if a&armLockup != 0 {
		w.rec = beginWait(lock, st)
	}
	switch {
	case w.rec != nil:
		w.start = w.rec.start
	case w.sample:
		w.start = Now()
	}
	return w
}

// ContentionEnd ends the watch of a slow-path wait: the lock is held. A
// sampled wait goes to the contention profile, with the caller's stack.
func ContentionEnd(w Wait) {
	if w.start != 0 {
		contentionEnd(w)
	}
}

// contentionEnd is the rest of ContentionEnd. It must be called by
// ContentionEnd only: the profile's stacks skip exactly these frames.
func contentionEnd(w Wait) {
	now := Now()
	if w.rec != nil {
		endWait(w.rec, now)
	}
	if w.sample {
		addContention(time.Duration(now - w.start))
	}
}

// ContentionProfileName is the name of the contention profile in
// runtime/pprof (pprof.Lookup) and net/http/pprof
// (/debug/pprof/pvlock.contention).
const ContentionProfileName = "pvlock.contention"

// ContentionUnit is the waiting time one sample of the contention profile
// stands for. runtime/pprof's custom profiles count stacks and carry no
// other value, so a sampled wait of d adds d/ContentionUnit samples of its
// stack, rounded at random to a whole number with that mean: a stack's
// count is proportional to the time waited there.
const ContentionUnit = time.Millisecond

// MaxContentionUnits bounds the samples one wait adds: a wait longer than
// MaxContentionUnits*ContentionUnit (a second) counts as that long.
// Longer waits are what the lockup detector reports.
const MaxContentionUnits = int(time.Second / ContentionUnit)

// MaxContentionSamples bounds the samples the profile holds. Once it is
// full, the profile keeps a uniform random subset of all samples taken
// (reservoir sampling): each stack's share of the count stays an unbiased
// estimate of its share of the waiting, while the total stops growing.
const MaxContentionSamples = 4096

// contentionRate is the sampling rate: on average 1 in rate slow-path
// acquisitions is timed; <= 0: none.
var contentionRate atomic.Int64

// profile is the contention profile and its reservoir. The profile is
// created with the first non-zero rate, so that a program that never
// samples lists no such profile.
var profile struct {
	once sync.Once
	p    *pprof.Profile
	mu   sync.Mutex // serialises the reservoir's updates of p
	seen int64      // samples offered so far
	rng  *rand.Rand // for the reservoir's replacements, under mu
}

// SetContentionProfileRate sets the contention profile's rate, as
// runtime.SetMutexProfileFraction sets the mutex profile's: on average 1
// in rate slow-path acquisitions is sampled, 0 (or less) turns sampling
// off. It returns the previous rate. The first positive rate registers the
// profile with runtime/pprof. Samples already taken stay in the profile.
func SetContentionProfileRate(rate int) int {
	if rate < 0 {
		rate = 0
	}
	if rate > 0 {
		profile.once.Do(func() {
			profile.p = pprof.Lookup(ContentionProfileName)
			if profile.p == nil {
				profile.p = pprof.NewProfile(ContentionProfileName)
			}
			profile.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		})
	}
	armMu.Lock()
	defer armMu.Unlock()
	prev := contentionRate.Swap(int64(rate))
	setArmed(armProfile, rate > 0)
	return int(prev)
}

// ContentionProfileRate returns the contention profile's rate.
func ContentionProfileRate() int { return int(contentionRate.Load()) }

// armMu serialises the setters of armed's bits with their settings.
var armMu sync.Mutex

// contentionSkip is the skip of Profile.Add that leaves out the frames of
// this package.
const contentionSkip = 4

// contentionSlot is the key of one sample in the profile: its index in the
// reservoir.
type contentionSlot int

// addContention adds a sampled wait of d to the profile, with the stack of
// the goroutine that waited, from the lock package's slow-path entry up.
func addContention(d time.Duration) {
	units := int(d / ContentionUnit)
	if rest := d % ContentionUnit; rest > 0 && rand.Int64N(int64(ContentionUnit)) < int64(rest) {
		units++
	}
	units = min(units, MaxContentionUnits)
	if units == 0 {
		return
	}
	profile.mu.Lock()
	defer profile.mu.Unlock()
	for range units {
		profile.seen++
		slot := profile.seen - 1
		if slot >= MaxContentionSamples {
			// Algorithm R: the n'th sample replaces a random one with
			// probability MaxContentionSamples/n.
			slot = profile.rng.Int64N(profile.seen)
			if slot >= MaxContentionSamples {
				continue
			}
			profile.p.Remove(contentionSlot(slot))
		}
		// Skip Add, addContention, contentionEnd and ContentionEnd (the
		// deferred call's wrapper is elided): the stack starts in the lock
		// package's slow path. TestContentionProfileStacks checks it.
		profile.p.Add(contentionSlot(slot), contentionSkip)
	}
}
