package lockcore

import (
	"testing"
	"time"
)

func TestSpinCalibration(t *testing.T) {
	if c := SpinCost(); c <= 0 || c > time.Microsecond {
		t.Fatalf("SpinCost = %v", c)
	}
	if SpinIterations(0) != 1 {
		t.Fatal("SpinIterations(0) != 1")
	}
	if a, b := SpinIterations(10*time.Microsecond), SpinIterations(100*time.Microsecond); b < 5*a {
		t.Fatalf("SpinIterations not proportional: %d vs %d", a, b)
	}
}

func TestLabel(t *testing.T) {
	type enum int
	names := []string{"zero", "one"}
	for v, want := range map[enum]string{0: "zero", 1: "one", 2: "enum(2)", -1: "enum(-1)"} {
		if got := Label(names, v, "enum"); got != want {
			t.Errorf("Label(%d) = %q, want %q", int(v), got, want)
		}
	}
}
