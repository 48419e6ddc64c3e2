package torture

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
)

// An interrupt (pvbench torture cancels the context on SIGINT) must not
// read as a passed torture: the run is marked Interrupted and its last
// line says INTERRUPTED, not SUCCESS.
func TestInterruptIsNotSuccess(t *testing.T) {
	lk, err := LookupLock("pv-ticket")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testkit.Buffer
	go func() {
		// Interrupt once the vCPUs acquire the lock: on a loaded host,
		// starting them can take longer than the interrupt was to wait.
		running := regexp.MustCompile(`Total: [1-9]`)
		out.Await(time.Minute, running.MatchString)
		cancel()
	}()
	start := time.Now()
	res, err := Run(ctx, Config{Lock: lk, Overcommit: 2, Duration: time.Minute, Interval: 100 * time.Millisecond, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the cancelled run took %v", d)
	}
	if !res.Interrupted || !res.OK() {
		t.Errorf("Interrupted %v, OK %v (failures %v), want an interrupted run without failures", res.Interrupted, res.OK(), res.Failures)
	}
	if s := out.String(); strings.Contains(s, "SUCCESS") || !strings.Contains(s, "End of test: INTERRUPTED: pv-ticket: stopped after") {
		t.Errorf("report of an interrupted run:\n%s", s)
	}

	// A run that reaches its Duration is not interrupted.
	var full testkit.Buffer
	res, err = Run(context.Background(), Config{Lock: lk, Overcommit: 2, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond, Out: &full})
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted || !strings.Contains(full.String(), "End of test: SUCCESS: pv-ticket") {
		t.Errorf("a full run: Interrupted %v\n%s", res.Interrupted, full.String())
	}
}
