package pvlock_test

import (
	"testing"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

// TestPolicyRoundTrip checks that SetPolicy puts every field in force and
// that CurrentPolicy reads back what was set, the defaults first.
func TestPolicyRoundTrip(t *testing.T) {
	old := pvlock.CurrentPolicy()
	defer pvlock.SetPolicy(old)
	if !old.PVSpin || !old.Stats || old.HaltTimeout != pvlock.DefaultHaltTimeout ||
		!old.DirectedYield || old.YieldSlice != pvlock.DefaultYieldSlice || !old.HaltPollAdaptive {
		t.Fatalf("default policy %+v", old)
	}
	want := pvlock.Policy{HaltTimeout: time.Minute, HaltPoll: time.Millisecond, YieldSlice: time.Second}
	pvlock.SetPolicy(want)
	if got := pvlock.CurrentPolicy(); got != want {
		t.Fatalf("CurrentPolicy() = %+v after SetPolicy(%+v)", got, want)
	}
	pvlock.SetPolicy(pvlock.Policy{HaltPoll: -time.Second})
	if got := pvlock.CurrentPolicy().HaltPoll; got != 0 {
		t.Fatalf("a negative HaltPoll reads back as %v, want 0", got)
	}
}
