package lockcore

import (
	"runtime/pprof"
	"testing"
	"time"

	"github.com/pvlock/pvlock/lockstat"
)

func TestContentionOffIsZeroWait(t *testing.T) {
	var x int
	if w := ContentionStart(&x, nil); w != (Wait{}) {
		t.Fatalf("ContentionStart with both watchers off = %+v, want the zero Wait", w)
	}
	ContentionEnd(Wait{}) // must do nothing
}

func TestContentionRateSetting(t *testing.T) {
	if prev := SetContentionProfileRate(5); prev != 0 {
		t.Fatalf("first SetContentionProfileRate = %d, want 0", prev)
	}
	if armed.Load()&armProfile == 0 || ContentionProfileRate() != 5 {
		t.Fatal("a positive rate does not arm the profile")
	}
	if prev := SetContentionProfileRate(-1); prev != 5 {
		t.Fatalf("SetContentionProfileRate(-1) = %d, want 5", prev)
	}
	if armed.Load()&armProfile != 0 || ContentionProfileRate() != 0 {
		t.Fatal("rate 0 leaves the profile armed")
	}
	if pprof.Lookup(ContentionProfileName) == nil {
		t.Fatal("the profile is not registered")
	}
}

// A wait adds its time in units, rounded at random with the right mean,
// and the reservoir never holds more than MaxContentionSamples.
func TestContentionUnitsAndReservoir(t *testing.T) {
	SetContentionProfileRate(1)
	defer SetContentionProfileRate(0)
	p := pprof.Lookup(ContentionProfileName)
	// Count the samples offered, not those the profile holds: once an
	// earlier run has filled the reservoir, its count stays at the cap.
	seen := func() int64 {
		profile.mu.Lock()
		defer profile.mu.Unlock()
		return profile.seen
	}
	before := seen()
	const n = 2000
	for range n {
		addContention(ContentionUnit / 4) // a quarter unit: 1 in 4 adds one
	}
	got := seen() - before
	if got < n/4-150 || got > n/4+150 {
		t.Fatalf("%d quarter-unit waits added %d samples, want about %d", n, got, n/4)
	}
	addContention(time.Hour) // capped at MaxContentionUnits
	for range 2 * MaxContentionSamples / MaxContentionUnits {
		addContention(time.Second)
	}
	if c := p.Count(); c != MaxContentionSamples {
		t.Fatalf("profile holds %d samples, want the cap %d", c, MaxContentionSamples)
	}
}

// BenchmarkContentionOff is what a slow-path entry pays with the profile
// and the detector off: ContentionStart and a deferred ContentionEnd.
func BenchmarkContentionOff(b *testing.B) {
	var x int
	st := lockstat.New("benchoff", "pv", nil)
	for b.Loop() {
		func() {
			defer ContentionEnd(ContentionStart(&x, st))
		}()
	}
}
