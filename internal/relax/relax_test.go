package relax

import (
	"testing"
	"time"
)

func TestPauseReturns(t *testing.T) {
	Pause(0)
	Pause(1)
	start := time.Now()
	Pause(1 << 30) // clamped to MaxPause, so this must return quickly
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Pause(1<<30) took %v; the bound of %d PAUSEs was not applied", d, MaxPause)
	}
}

func BenchmarkPause1(b *testing.B) {
	for b.Loop() {
		Pause(1)
	}
}

func TestYieldReturns(t *testing.T) {
	start := time.Now()
	for range 100 {
		Yield()
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("100 Yields took %v", d)
	}
}
