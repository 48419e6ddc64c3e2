package kick

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Waiters bound to OS threads, looked up by thread id. The table is sharded
// and each shard is an immutable map replaced on Bind/Unbind, so the lookup
// on the halt path is one atomic load and a map read, with no lock.
const bindShards = 64

var bound [bindShards]struct {
	mu sync.Mutex // serialises writers of m
	m  atomic.Pointer[map[int]*Waiter]
}

// nbound counts the bound waiters. While it is 0, as in a program that
// uses the locks only from ordinary goroutines, Current answers without
// the gettid system call, so that parking a goroutine and a spin loop's
// periodic pvlock.PollCurrent cost no system call.
var nbound atomic.Int64

// Bind attaches w to the calling OS thread, so that Get on this thread
// returns w. The caller must have locked its goroutine to the thread with
// runtime.LockOSThread and must call Unbind before the goroutine unlocks or
// exits. w normally uses the Futex backend.
func Bind(w *Waiter) error {
	tid := unix.Gettid()
	s := &bound[tid%bindShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old != nil {
		if _, ok := (*old)[tid]; ok {
			return fmt.Errorf("kick: thread %d already has a bound waiter", tid)
		}
	}
	m := make(map[int]*Waiter, mapLen(old)+1)
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
	tid := unix.Gettid()
	s := &bound[tid%bindShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[tid]; !ok {
		return
	}
	m := make(map[int]*Waiter, len(*old))
	for k, v := range *old {
		if k != tid {
			m[k] = v
		}
	}
	s.m.Store(&m)
	nbound.Add(-1)
}

func mapLen(m *map[int]*Waiter) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// Current returns the waiter bound to the calling thread, or nil. It costs
// one gettid system call, or nothing while no waiter is bound at all. A
// thread that called Bind sees its own binding: Bind counted it first.
func Current() *Waiter {
	if nbound.Load() == 0 {
		return nil
	}
	tid := unix.Gettid()
	m := bound[tid%bindShards].m.Load()
	if m == nil {
		return nil
	}
	return (*m)[tid]
}

var pool = sync.Pool{New: func() any { return NewWaiter(Park) }}

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

// Put returns a waiter obtained from Get. Bound waiters are left alone.
func Put(w *Waiter) {
	if w.backend == Park {
		w.Owner = nil
		pool.Put(w)
	}
}
