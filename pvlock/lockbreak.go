package pvlock

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/relax"
)

// Lock-break (as for KVM's mmu_lock during dirty logging). A vCPU that
// holds a lock for a long batch makes every other vCPU wait for the whole
// batch. The kernel's fix is to check, every so many units of work, whether
// the lock is contended or the scheduler wants the CPU, and if so to drop
// the lock, let the others in and take it again (cond_resched_lock with
// spin_needbreak or spin_is_contended). CondRelock is that check:
//
//	mu.Lock()
//	for i, page := range pages {
//		protect(page)
//		if i%512 == 511 {
//			v.CondRelock(&mu) // others get a turn; the batch goes on
//		}
//	}
//	mu.Unlock()
//
// The caller must not rely on anything it read under the lock before the
// call staying true after it: the lock may have been released in between.

// Contender is a lock that can tell whether someone is waiting for it, like
// ticket.Lock (the kernel's spin_is_contended).
type Contender interface {
	sync.Locker
	IsContended() bool
}

// breakPause is how many PAUSEs CondRelock spends between its unlock and its
// re-lock when it does not yield, the kernel's cpu_relax(): a breath in
// which a waiter that spins on the lock can take it.
const breakPause = 16

// CondRelock is called by the holder of l in a long batch: if another
// goroutine waits for l, it unlocks l, pauses briefly and locks l again,
// and reports true; otherwise it returns false at the cost of one
// IsContended check. The caller holds l when CondRelock returns, either way.
//
// For a fair lock such as a ticket lock, the re-lock queues behind every
// waiter that was already waiting, so each of them gets exactly one turn
// per break and the batch then continues: waiters wait for one step of the
// batch instead of all of it, and the batch still completes.
func CondRelock(l Contender) bool {
	if !l.IsContended() {
		return false
	}
	l.Unlock()
	relax.Pause(breakPause)
	l.Lock()
	return true
}

// CondRelock is the vCPU-aware CondRelock: it also breaks when the host
// wants v's physical CPU back, and then gives the CPU away (sched_yield)
// while it does not hold l. The host wants the CPU, as far as user space
// can tell, in either of two cases:
//
//   - it asked explicitly: RequestYield was called since v's last check
//     (the request is consumed by the check);
//   - v's time slice is about to end: v shares its CPU with other runnable
//     threads (its steal time, the run-queue wait of its thread, grew by at
//     least preemptedSteal between two checks, so Linux preempted it and
//     has just given the CPU back), and it has run for at least Policy.YieldSlice
//     since then. This is the user-space stand-in for the kernel's
//     need_resched: Linux is about to preempt v anyway, and it had better
//     do so while v holds no lock than in the middle of the batch
//     (lock-holder preemption). A vCPU that has the CPU to itself is never
//     preempted, so it never yields; after a yield, v waits for the next
//     preemption before it yields again.
//
// Steal is read (one pread of the thread's scheduler statistics, about a
// microsecond: see runDelay) at most once per stealCheckInterval, so a
// call that does not break costs one IsContended, one atomic load and one
// clock read.
//
// CondRelock must be called on v's own thread, by the holder of l.
func (v *VCPU) CondRelock(l Contender) bool {
	yield := v.hostWantsYield()
	if !yield && !l.IsContended() {
		return false
	}
	l.Unlock()
	if yield {
		v.brk.yields.Add(1)
		relax.Yield()
	} else {
		relax.Pause(breakPause)
	}
	l.Lock()
	return true
}

// RequestYield asks v to give up its physical CPU at its next lock break
// (its next CondRelock). It may be called from any goroutine; the request
// stays until v consumes it.
func (v *VCPU) RequestYield() { v.brk.request.Store(true) }

// Yields returns how many times CondRelock on v yielded its CPU during the
// current (or last) run of its VM.
func (v *VCPU) Yields() uint64 { return v.brk.yields.Load() }

// stealCheckInterval is the minimum time between two reads of a vCPU's
// steal time by CondRelock.
const stealCheckInterval = 50 * time.Microsecond

// preemptedSteal is the steal-time growth between two checks that counts
// as a preemption: more than a wake-up's wait for a CPU, less than the
// shortest time slice.
const preemptedSteal = 100 * time.Microsecond

// DefaultYieldSlice is the default Policy.YieldSlice: a little under the ≈2.7 ms
// median time slice of a CPU-bound thread sharing a core on our machines.
const DefaultYieldSlice = lockcore.DefaultYieldSlice

// breakState is a vCPU's lock-break bookkeeping. request is set by any
// goroutine; yields is written by the vCPU and read atomically by others;
// the rest belongs to the vCPU's thread.
type breakState struct {
	request   atomic.Bool
	yields    atomic.Uint64
	fd        int   // the vCPU thread's scheduler statistics while fdState is fdOpen
	fdState   uint8 // fdNone, fdOpen or fdFailed
	lastCheck int64 // monotonic ns of the last steal read
	lastSteal int64 // run_delay at the last steal read, ns
	resumedAt int64 // monotonic ns of the check that saw the last preemption; 0: none pending
}

const (
	fdNone   = iota // not opened yet in this run
	fdOpen          // open
	fdFailed        // opening failed: no slice-based yields in this run
)

// monoBase anchors the monotonic clock used for rate limiting.
var monoBase = time.Now()

func mono() int64 { return int64(time.Since(monoBase)) }

// reset prepares the bookkeeping when the vCPU enters its workload.
func (b *breakState) reset(steal int64) {
	b.close()
	b.yields.Store(0)
	b.lastCheck = mono()
	b.lastSteal = steal
	b.resumedAt = 0
}

// close releases the descriptor of the scheduler statistics.
func (b *breakState) close() {
	if b.fdState == fdOpen {
		closeRunDelay(b.fd)
	}
	b.fdState = fdNone
}

// hostWantsYield consumes an explicit request, or reports that v has run a
// whole slice since Linux last preempted it.
func (v *VCPU) hostWantsYield() bool {
	b := &v.brk
	if b.request.Load() && b.request.Swap(false) {
		return true
	}
	slice := lockcore.YieldSlice.Load()
	if slice <= 0 {
		return false
	}
	now := mono()
	if now-b.lastCheck < int64(stealCheckInterval) {
		return false
	}
	b.lastCheck = now
	steal, ok := v.readSteal()
	if !ok {
		return false
	}
	if steal-b.lastSteal >= int64(preemptedSteal) {
		b.resumedAt = now // preempted since the last check: a new slice starts
	}
	b.lastSteal = steal
	if b.resumedAt != 0 && now-b.resumedAt >= slice {
		b.resumedAt = 0
		return true
	}
	return false
}

// readSteal returns the run_delay of the vCPU's thread, keeping its
// scheduler statistics open between reads (see runDelay).
func (v *VCPU) readSteal() (int64, bool) {
	b := &v.brk
	switch b.fdState {
	case fdFailed:
		return 0, false
	case fdNone:
		fd, err := openRunDelay(int(v.tid.Load()))
		if err != nil {
			b.fdState = fdFailed
			return 0, false
		}
		b.fd, b.fdState = fd, fdOpen
	}
	return preadRunDelay(b.fd)
}
