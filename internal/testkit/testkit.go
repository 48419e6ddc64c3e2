// Package testkit holds the small helpers the tests of every package
// share: waiting for a condition or for a channel's next value, expected
// panics, running goroutines, the
// mutual-exclusion oracle, the hung-test watchdog, an output buffer that a
// running program and its test may use at once, and the -short switch of
// run lengths. It imports none
// of pvlock's packages, so that every one of them, kick included, may use
// it in its own tests; the stress harness that needs the runtime is
// internal/locktest.
package testkit

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
)

// WaitFor polls cond until it holds, and fails tb, naming what it waited
// for, if 30 seconds pass first.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if !Eventually(30*time.Second, cond, nil) {
		tb.Fatalf("timed out waiting for %s", what)
	}
}

// Receive returns the next value from ch, and fails tb with failure if
// none comes within timeout.
func Receive[T any](tb testing.TB, ch <-chan T, timeout time.Duration, failure string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		tb.Fatal(failure)
		var none T
		return none
	}
}

// MustPanic calls f and fails tb unless f panics with a value whose text
// contains want.
func MustPanic(tb testing.TB, want string, f func()) {
	tb.Helper()
	defer func() {
		tb.Helper()
		r := recover()
		if r == nil {
			tb.Fatalf("no panic, want one containing %q", want)
		}
		if !strings.Contains(fmt.Sprint(r), want) {
			tb.Fatalf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

// Goroutines runs body(g) on n goroutines, g from 0 to n-1, and returns
// when all have returned.
func Goroutines(n int, body func(g int)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { body(g) })
	}
	wg.Wait()
}

// Oracle checks mutual exclusion inside critical sections, as
// locktorture's lock_is_write_held: a flag that must be clear on entry,
// plus a plain counter that the race detector watches.
type Oracle struct {
	held       atomic.Bool
	violations atomic.Int64
	// Counter counts the critical sections; plain on purpose: only
	// touched under the lock.
	Counter int64
}

// Enter and Exit bracket a critical section; Enter reports a violation,
// and returns false, if another goroutine is inside.
func (o *Oracle) Enter() bool {
	if !o.held.CompareAndSwap(false, true) {
		o.violations.Add(1)
		return false
	}
	return true
}

// Exit ends a critical section that Enter began.
func (o *Oracle) Exit() { o.held.Store(false) }

// Violations returns how many critical sections overlapped another.
func (o *Oracle) Violations() int64 { return o.violations.Load() }

// CriticalSection runs the i'th critical section: a few polls, every 32nd
// time a longer one, so that holders get preempted inside it under
// overcommit.
func (o *Oracle) CriticalSection(i int) {
	if !o.Enter() {
		return
	}
	o.Counter++
	n := uint32(4)
	if i%32 == 0 {
		n = 200
	}
	for k := uint32(0); k < n; k++ {
		relax.Pause(1)
	}
	o.Exit()
}

// Watchdog makes a hung test fail fast, with every goroutine's stack and
// the state dump describes, instead of waiting for the go test timeout.
// Stop the timer it returns when the test is done.
func Watchdog(limit time.Duration, what string, dump func() string) *time.Timer {
	return time.AfterFunc(limit, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("test %s: no progress after %v (lost wake-up or deadlock)\n%s", what, limit, dump()))
	})
}
