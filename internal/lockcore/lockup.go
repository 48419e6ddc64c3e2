package lockcore

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/curg"
	"github.com/pvlock/pvlock/kick"
)

// Lockup detection, after the kernel's CONFIG_DEBUG_SPINLOCK ("spinlock
// lockup suspected"). With a threshold set, every slow-path wait is
// recorded in a registry keyed by its goroutine (ContentionStart), and a
// waiter that notices it has waited longer than the threshold reports it,
// once per wait: a halt that would outlast the threshold is cut at it and
// reports (Halt), and spin loops look every SpinPollEvery spins (Pause,
// Spinner.Spin). The report names the lock, the waiter and, where the
// detector saw it, the holder: the goroutine that last took the lock
// through its slow path while the detector was on. The fast paths record
// nothing, so a lock last taken on a fast path has no known holder.
//
// The detector is off by default: while on, every slow-path acquisition
// pays for a clock read, a registry update and the goroutine's ID (a
// microsecond or two), which a saturated lock would feel. The halt
// watchdog's counters (HaltTimeouts) already show a stuck waiter at no
// cost; the detector is what says which lock, and where.

// lockupThreshold is the detector's threshold in nanoseconds; 0: off.
var lockupThreshold atomic.Int64

// lockupsSuspected counts the lockups reported.
var lockupsSuspected atomic.Uint64

// SetLockupThreshold sets the lockup detector's threshold, <= 0 turning it
// off, and returns the previous one. Waits that began while it was off are
// not watched.
func SetLockupThreshold(d time.Duration) time.Duration {
	if d < 0 {
		d = 0
	}
	armMu.Lock()
	defer armMu.Unlock()
	prev := lockupThreshold.Swap(int64(d))
	setArmed(armLockup, d > 0)
	return time.Duration(prev)
}

// LockupThreshold returns the lockup detector's threshold; 0: off.
func LockupThreshold() time.Duration { return time.Duration(lockupThreshold.Load()) }

// LockupsSuspected returns the number of lockups reported since the
// process started.
func LockupsSuspected() uint64 { return lockupsSuspected.Load() }

// Lockup is one report of the lockup detector.
type Lockup struct {
	Lock       uintptr       // the lock's address
	Kind, Mode string        // its kind and mode, e.g. "ticket" and "pv"
	Waited     time.Duration // how long the waiter had waited
	Threshold  time.Duration // the threshold in force
	Goroutine  uint64        // the waiter's goroutine ID
	VCPU       *VCPU         // the waiter's vCPU, nil for a goroutine
	Stack      []byte        // the waiter's stack, as runtime.Stack formats it
	Holder     *LockupHolder // the suspected holder, nil if unknown
}

// LockupHolder is the goroutine that last took a lock through its slow
// path while the detector was on, before the reported wait began.
type LockupHolder struct {
	Goroutine uint64        // its goroutine ID
	VCPU      *VCPU         // its vCPU, nil for a goroutine
	Held      time.Duration // how long ago it took the lock
}

// lockupHook receives the reports; nil: nobody.
var lockupHook atomic.Pointer[func(Lockup)]

// SetLockupHook makes h receive the lockup reports; with nil they are only
// counted. pvlock sets its default hook (pvlock.LogLockup) as it loads,
// and only pvlock turns the detector on. The hook runs on the waiting
// goroutine, which goes on waiting when it returns.
func SetLockupHook(h func(Lockup)) {
	if h == nil {
		lockupHook.Store(nil)
		return
	}
	lockupHook.Store(&h)
}

// waitRecord is the registry's record of one slow-path wait.
type waitRecord struct {
	g        uintptr // the waiter's key (gkey)
	lock     uintptr
	st       *Stats
	start    int64 // Now() at the slow-path entry
	vcpu     *VCPU
	outer    *waitRecord // the wait this one interrupted, on the same goroutine
	reported atomic.Bool
}

// The registry of the waits in progress, keyed by goroutine. A wait may
// begin while another of the same goroutine is in progress (a cross-vCPU
// call's handler run from a spin loop takes a lock): the inner record
// hides the outer one until it ends.
const waitShards = 64

var waits [waitShards]struct {
	mu sync.Mutex
	m  map[uintptr]*waitRecord
	_  [48]byte // a shard per cache line
}

// gkey identifies the calling goroutine among live ones: the address of
// its g where internal/curg can read it, else its goroutine ID.
func gkey() uintptr {
	if curg.Supported {
		return curg.Pointer()
	}
	return uintptr(goid())
}

func waitShard(g uintptr) int { return int((g ^ g>>9) % waitShards) }

// currentVCPU returns the calling thread's vCPU, or nil.
func currentVCPU() *VCPU {
	if w := kick.Current(); w != nil {
		return Of(w)
	}
	return nil
}

// beginWait records the calling goroutine's wait for lock.
func beginWait(lock uintptr, st *Stats) *waitRecord {
	rec := &waitRecord{g: gkey(), lock: lock, st: st, start: Now(), vcpu: currentVCPU()}
	sh := &waits[waitShard(rec.g)]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uintptr]*waitRecord)
	}
	rec.outer = sh.m[rec.g]
	sh.m[rec.g] = rec
	sh.mu.Unlock()
	return rec
}

// endWait removes rec from the registry and records its goroutine as the
// lock's holder.
func endWait(rec *waitRecord, now int64) {
	sh := &waits[waitShard(rec.g)]
	sh.mu.Lock()
	if sh.m[rec.g] == rec {
		if rec.outer != nil {
			sh.m[rec.g] = rec.outer
		} else {
			delete(sh.m, rec.g)
		}
	}
	sh.mu.Unlock()
	holders[holderIndex(rec.lock)].Store(&holderRecord{lock: rec.lock, goroutine: goid(), vcpu: rec.vcpu, since: now})
}

// currentWait returns the calling goroutine's wait in progress, or nil.
func currentWait() *waitRecord {
	g := gkey()
	sh := &waits[waitShard(g)]
	sh.mu.Lock()
	rec := sh.m[g]
	sh.mu.Unlock()
	return rec
}

// The holders the detector saw, in a direct-mapped table: a lock's entry
// may be replaced by another lock's, and is then unknown again.
const holderSlots = 1024

type holderRecord struct {
	lock      uintptr
	goroutine uint64
	vcpu      *VCPU
	since     int64 // Now() when it took the lock
}

var holders [holderSlots]atomic.Pointer[holderRecord]

func holderIndex(lock uintptr) int { return int((lock>>4 ^ lock>>14) % holderSlots) }

// overdue returns how long past the threshold rec is (>= 0: report), and
// false if the detector is off or rec was reported already.
func overdue(rec *waitRecord, now int64) (time.Duration, bool) {
	bound := lockupThreshold.Load()
	if bound <= 0 || rec.reported.Load() {
		return 0, false
	}
	return time.Duration(now - rec.start - bound), true
}

// reportLockup reports rec, unless it was reported already.
func reportLockup(rec *waitRecord) {
	if !rec.reported.CompareAndSwap(false, true) {
		return
	}
	now := Now()
	lockupsSuspected.Add(1)
	stack := stackOf()
	r := Lockup{
		Lock: rec.lock, Kind: rec.st.Kind(), Mode: rec.st.Mode(),
		Waited: time.Duration(now - rec.start), Threshold: LockupThreshold(),
		Goroutine: parseGoid(stack), VCPU: rec.vcpu, Stack: stack,
	}
	if h := holders[holderIndex(rec.lock)].Load(); h != nil && h.lock == rec.lock && h.since <= rec.start {
		r.Holder = &LockupHolder{Goroutine: h.goroutine, VCPU: h.vcpu, Held: time.Duration(now - h.since)}
	}
	if h := lockupHook.Load(); h != nil {
		(*h)(r)
	}
}

// CheckSpin is the lockup check of a spin loop that may run long: spin
// loops call it every SpinPollEvery spins. With the detector off it is one
// atomic load.
func CheckSpin() {
	if armed.Load()&armLockup != 0 {
		checkSpin()
	}
}

func checkSpin() {
	if rec := currentWait(); rec != nil {
		if late, ok := overdue(rec, Now()); ok && late >= 0 {
			reportLockup(rec)
		}
	}
}

// haltWatched is w.Halt(timeout) under the lockup detector: a halt of a
// watched wait that would outlast the threshold halts until the threshold,
// reports, and halts for the rest of timeout. It returns what the halt
// would have returned: TimedOut only once timeout has passed.
func haltWatched(w *kick.Waiter, timeout time.Duration) kick.Result {
	if armed.Load()&armLockup == 0 {
		return w.Halt(timeout)
	}
	rec := currentWait()
	if rec == nil {
		return w.Halt(timeout)
	}
	late, ok := overdue(rec, Now())
	switch {
	case !ok:
		return w.Halt(timeout)
	case late >= 0:
		reportLockup(rec)
		return w.Halt(timeout)
	}
	left := -late
	if timeout > 0 && timeout <= left {
		return w.Halt(timeout) // the watchdog comes first; the next halt looks again
	}
	start := time.Now()
	if res := w.Halt(left); res != kick.TimedOut {
		return res
	}
	reportLockup(rec)
	if timeout <= 0 {
		return w.Halt(0)
	}
	rest := timeout - time.Since(start)
	if rest <= 0 {
		return kick.TimedOut
	}
	return w.Halt(rest)
}

// stackOf returns the calling goroutine's stack, as runtime.Stack formats
// it.
func stackOf() []byte {
	buf := make([]byte, 4096)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) || len(buf) >= 1<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goid returns the calling goroutine's ID.
func goid() uint64 {
	var buf [64]byte
	return parseGoid(buf[:runtime.Stack(buf[:], false)])
}

// parseGoid reads the goroutine ID from the header of runtime.Stack's
// output ("goroutine 17 [running]:"), or returns 0.
func parseGoid(stack []byte) uint64 {
	const prefix = "goroutine "
	if len(stack) < len(prefix) || string(stack[:len(prefix)]) != prefix {
		return 0
	}
	s := stack[len(prefix):]
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	id, err := strconv.ParseUint(string(s[:n]), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
