package main

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckFlags(t *testing.T) {
	for _, c := range []struct {
		oc   float64
		d    time.Duration
		args []string
		want string
	}{
		{3, -time.Second, nil, "-duration -1s must be positive"},
		{3, 0, nil, "-duration 0s must be positive"},
		{0, time.Second, nil, "-oc 0"},
		{-2, time.Second, nil, "-oc -2"},
		{math.NaN(), time.Second, nil, "-oc NaN"},
		{math.Inf(1), time.Second, nil, "-oc +Inf"},
		{3, time.Second, []string{"x"}, "unexpected arguments"},
	} {
		if err := checkFlags(c.oc, c.d, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkFlags(%v, %v, %q) = %v, want %q", c.oc, c.d, c.args, err, c.want)
		}
	}
	if err := checkFlags(3, time.Second, nil); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// A short run measures something, and no vCPU waits for a CPU longer than
// the whole call lasts (on a busy host that is longer than the run's
// duration: the run starts with its first vCPU).
func TestRunShort(t *testing.T) {
	start := time.Now()
	ops, _, steal, n, err := run(new(sync.Mutex), 1, 100*time.Millisecond)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if pct := 100 * steal.Seconds() / (elapsed.Seconds() * float64(n)); ops == 0 || n == 0 || pct < 0 || pct > 100 {
		t.Errorf("ops %d, vCPUs %d, steal %v (%.1f%%)", ops, n, steal, pct)
	}
}
