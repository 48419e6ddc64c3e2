package torture

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
)

// rwTarget is the rw torture's total of acquisitions: 10^7, or 10^6 under
// the race detector, which slows every acquisition several times.
func rwTarget() uint64 {
	switch {
	case testing.Short():
		return 200_000
	case raceEnabled:
		return 1_000_000
	}
	return 10_000_000
}

// TestTortureRW is the rw mode (locktorture's rw_lock) on the PV
// reader-writer lock: writers at 1x and readers beside them, with stutter
// and shuffle, run by rounds until they have made rwTarget acquisitions
// together. Every round must end clean: no reader saw a writer inside, no
// writer saw anyone, no wake-up was lost and no halt timed out. The other
// reader-writer locks get one short round each.
func TestTortureRW(t *testing.T) {
	target := rwTarget()
	budget := 4 * time.Minute
	var total uint64
	start := time.Now()
	round := func(name string, d time.Duration, seed uint64) {
		t.Helper()
		lk, err := LookupLock(name)
		if err != nil {
			t.Fatal(err)
		}
		var out testkit.Buffer
		res, err := Run(context.Background(), Config{
			Lock: lk, Overcommit: 1, Readers: 4, Duration: d, Interval: d / 2, Seed: seed,
			Stutter: d / 4, Shuffle: d / 10, Work: 8, Out: &out,
			Watchdog: 3 * time.Second, StarveAfter: 2 * time.Second,
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d acquisitions (%d reads) by %d vCPUs (%d readers) in %v, per vCPU %v",
			name, res.Acquisitions, res.Reads, res.VCPUs, res.Readers, res.Elapsed.Round(time.Millisecond), res.PerVCPU)
		if !res.OK() || res.Violations != 0 || res.LostWakeups != 0 || res.HaltTimeouts != 0 || res.Stalls != 0 {
			t.Fatalf("%s failed: %+v\n%s", name, res, out.String())
		}
		if res.Readers != 4 || res.Reads == 0 || res.Reads == res.Acquisitions {
			t.Fatalf("%s: want both readers and writers to acquire: %+v", name, res)
		}
		if !strings.Contains(out.String(), "Readers: ") || !strings.Contains(out.String(), "End of test: SUCCESS: "+name) {
			t.Fatalf("%s: report lacks the readers' counts or the SUCCESS line:\n%s", name, out.String())
		}
		total += res.Acquisitions
	}
	for _, name := range []string{"sync.RWMutex", "native-rwlock", "pv-rwlock-short"} {
		round(name, time.Second, uint64(len(name)))
	}
	for seed := uint64(1); total < target; seed++ {
		if time.Since(start) > budget {
			t.Fatalf("only %d of %d acquisitions within %v: the host is too slow or too loaded for this test", total, target, budget)
		}
		round("pv-rwlock", 5*time.Second, seed)
	}
	t.Logf("%d acquisitions in total in %v", total, time.Since(start).Round(time.Millisecond))
}

// leakyRW is a reader-writer lock whose readers never wait: RLock lets a
// reader in beside the writer.
type leakyRW struct{ sync.Mutex }

func (*leakyRW) RLock()   {}
func (*leakyRW) RUnlock() {}

// TestRWDetectsReaderBesideWriter: the rw mode reports readers that get in
// beside a writer.
func TestRWDetectsReaderBesideWriter(t *testing.T) {
	var out testkit.Buffer
	res, err := Run(context.Background(), Config{
		Lock:     Lock{Name: "leaky-rw", New: func() sync.Locker { return new(leakyRW) }},
		Duration: 500 * time.Millisecond, Overcommit: 1, Readers: 2, Work: 64, Out: &out, noPlain: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Violations == 0 || !strings.Contains(out.String(), "End of test: FAILURE: leaky-rw: mutual exclusion violated") {
		t.Fatalf("the leaky reader-writer lock passed: %+v\n%s", res, out.String())
	}
}

// TestRWNeedsReadSide: the rw mode refuses a lock without RLock.
func TestRWNeedsReadSide(t *testing.T) {
	lk, err := LookupLock("sync.Mutex")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Lock: lk, Duration: time.Second, Readers: 2})
	if err == nil || !strings.Contains(err.Error(), "no read side") {
		t.Fatalf("rw mode on sync.Mutex: %v, want a refusal", err)
	}
	if _, err := Run(context.Background(), Config{Lock: lk, Duration: time.Second, Readers: -1}); err == nil || !strings.Contains(err.Error(), "readers") {
		t.Fatalf("-1 readers: %v, want a refusal", err)
	}
}
