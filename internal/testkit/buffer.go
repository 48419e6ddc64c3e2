package testkit

// This file holds the output buffer and the condition waits that the
// lab's tests (bench, bench/locks, bench/torture, bench/cmd/pvbench) and
// the examples' tests share.

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is an io.Writer that a running measurement and the test may
// share: the test can wait for a text to appear. The zero value is
// ready to use.
type Buffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{} // signalled on every write, once WaitFor made it
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor waits until the output holds s, failing the test after a
// minute.
func (l *Buffer) WaitFor(t *testing.T, s string) {
	t.Helper()
	if !l.Await(time.Minute, func(out string) bool { return strings.Contains(out, s) }) {
		t.Fatalf("output never showed %q:\n%s", s, l.String())
	}
}

// Await waits until cond holds for the output, looking again after every
// write, and reports whether it did within timeout. Unlike WaitFor it may
// be called from any goroutine.
func (l *Buffer) Await(timeout time.Duration, cond func(out string) bool) bool {
	l.mu.Lock()
	if l.more == nil {
		l.more = make(chan struct{}, 1)
	}
	more := l.more
	l.mu.Unlock()
	return Eventually(timeout, func() bool { return cond(l.String()) }, more)
}

// Eventually waits until cond holds and reports whether it did before
// timeout. It looks again whenever wake is signalled, and otherwise every
// 50µs when wake is nil, every 10ms when it is not.
func Eventually(timeout time.Duration, cond func() bool, wake <-chan struct{}) bool {
	period := 10 * time.Millisecond
	if wake == nil {
		period = 50 * time.Microsecond
	}
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-wake:
		case <-time.After(period):
		}
	}
	return true
}

// Short returns the short duration in -short mode, the long one
// otherwise.
func Short(short, long time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return long
}
