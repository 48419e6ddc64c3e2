package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineBuffer is an io.Writer that a running pvbench and the test may
// share: the test waits for a text to appear.
type lineBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func newLineBuffer() *lineBuffer { return &lineBuffer{more: make(chan struct{}, 1)} }

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the output holds s.
func (l *lineBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(l.String(), s) {
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("output never showed %q:\n%s", s, l.String())
		}
	}
}
