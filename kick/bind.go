package kick

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/curg"
)

// Waiters bound to OS threads, looked up by the bound goroutine's address
// (internal/curg: a few instructions) or, where that cannot be read, by
// thread id (threadID: on Linux a gettid system call, about a microsecond
// on a VM). A bound goroutine is locked to its thread, so either
// identifies the thread. The table is sharded and each shard is an
// immutable map replaced on Bind/Unbind, so the lookup on the halt path is
// one atomic load and a map read, with no lock.
const bindShards = 64

var bound [bindShards]struct {
	mu sync.Mutex // serialises writers of m
	m  atomic.Pointer[map[uintptr]*Waiter]
}

// self returns the calling goroutine's key in the bound table, and false
// where the build has no way to identify it: no internal/curg for the
// architecture and no thread id (threadID) for the system.
func self() (uintptr, bool) {
	if curg.Supported {
		return curg.Pointer(), true
	}
	return threadID()
}

// errNoIdentity is Bind's error where self has no key to give.
var errNoIdentity = fmt.Errorf("kick: Bind needs the goroutine's address (internal/curg: amd64, arm64) or Linux's gettid to identify the thread: %w", errors.ErrUnsupported)

// shard spreads keys over the shards; goroutine addresses are aligned, so
// their low bits are dropped.
func shard(key uintptr) uintptr { return (key ^ key>>9) % bindShards }

// nbound counts the bound waiters. While it is 0, as in a program that
// uses the locks only from ordinary goroutines, Current answers without
// identifying the caller (which may cost a gettid system call), so that
// parking a goroutine and a spin loop's periodic poll of cross-vCPU calls
// cost no system call.
var nbound atomic.Int64

// Bind attaches w to the calling OS thread, so that Get on this thread
// returns w. The caller must have locked its goroutine to the thread with
// runtime.LockOSThread and must call Unbind before the goroutine unlocks or
// exits. w normally uses the Futex backend. Where the calling goroutine
// cannot be identified (neither internal/curg nor gettid is available, see
// self), Bind returns an error that wraps errors.ErrUnsupported.
func Bind(w *Waiter) error {
	tid, ok := self()
	if !ok {
		return errNoIdentity
	}
	s := &bound[shard(tid)]
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old != nil {
		if _, ok := (*old)[tid]; ok {
			return errors.New("kick: the calling thread already has a bound waiter")
		}
	}
	m := make(map[uintptr]*Waiter, mapLen(old)+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[tid] = w
	nbound.Add(1) // before the store: a Current that sees w sees it counted
	s.m.Store(&m)
	return nil
}

// Unbind detaches the waiter bound to the calling thread, if any.
func Unbind() {
	tid, ok := self()
	if !ok {
		return // Bind never succeeded here
	}
	s := &bound[shard(tid)]
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[tid]; !ok {
		return
	}
	m := make(map[uintptr]*Waiter, len(*old))
	for k, v := range *old {
		if k != tid {
			m[k] = v
		}
	}
	s.m.Store(&m)
	nbound.Add(-1)
}

func mapLen(m *map[uintptr]*Waiter) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// Current returns the waiter bound to the calling thread, or nil. It costs
// a map lookup (on Linux platforms without internal/curg, a gettid system
// call too), or nothing while no waiter is bound at all. A thread that
// called Bind sees its own binding: Bind counted it first.
func Current() *Waiter {
	if nbound.Load() == 0 {
		return nil
	}
	tid, ok := self()
	if !ok {
		return nil
	}
	m := bound[shard(tid)].m.Load()
	if m == nil {
		return nil
	}
	return (*m)[tid]
}

// pool holds the Park waiters of goroutines that are not vCPUs. Only
// waiters it made itself go back into it (Waiter.pooled): a waiter made by
// NewWaiter and bound to a thread, whatever its backend, stays its owner's.
var pool = sync.Pool{New: func() any {
	w := NewWaiter(Park)
	w.pooled = true
	return w
}}

// GoroutineSlot is the Slot of pooled (Park backend) waiters.
const GoroutineSlot = -1

// Get returns the waiter for the calling goroutine: the one bound to its
// thread if it is a vCPU, else a pooled waiter with the Park backend. Pass
// the result to Put when done.
func Get() *Waiter {
	if w := Current(); w != nil {
		return w
	}
	w := pool.Get().(*Waiter)
	w.Slot = GoroutineSlot
	return w
}

// Put returns a waiter obtained from Get. Bound waiters are left alone,
// Park-backed ones included: only a waiter that came from the pool goes
// back to it, so an unbound goroutine never gets a vCPU's waiter (and
// never changes its Slot).
func Put(w *Waiter) {
	if w.pooled {
		pool.Put(w)
	}
}
