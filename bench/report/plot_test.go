package report

import (
	"image/color"
	"testing"

	"github.com/pvlock/pvlock/bench/locks"
)

// A lock keeps its colour whatever other locks share the plot, and the
// lab's locks all differ.
func TestLockColoursAreFixed(t *testing.T) {
	seen := map[color.Color]string{}
	for _, name := range locks.Names() {
		c := lockColor(name)
		if other, dup := seen[c]; dup {
			t.Errorf("%s and %s share a colour", name, other)
		}
		seen[c] = name
		if _, fixed := lockStyles[name]; !fixed {
			t.Errorf("lab lock %s has no fixed style", name)
		}
	}
	if lockColor("pv-qspin") != palette[3] || lockColor("some-new-lock") != lockColor("some-new-lock") {
		t.Error("colours are not fixed per name")
	}
}

func TestAxisNanos(t *testing.T) {
	for v, want := range map[float64]string{
		1: "1ns", 100: "100ns", 1e3: "1µs", 2e4: "20µs", 1.5e6: "1.5ms", 1e8: "100ms", 1e9: "1s", 1e10: "10s",
	} {
		if got := axisNanos(v); got != want {
			t.Errorf("axisNanos(%g) = %q, want %q", v, got, want)
		}
	}
	for _, tk := range (nanoTicks{}).Ticks(500, 2e8) {
		if tk.Label != "" && tk.Label != axisNanos(tk.Value) {
			t.Errorf("tick %g labelled %q", tk.Value, tk.Label)
		}
	}
}
