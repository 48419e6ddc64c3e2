package lockcore

import (
	"testing"
	"time"

	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
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

// A served waiter whose watchdog fires before its kicker gets to the kick
// (the kicker was preempted between hand-over and kick) was not lost: Halt
// waits for the kick in flight, returns Kicked and counts only the timeout.
// A served waiter that no kick follows is a lost wake-up.
func TestHaltLateKickIsNotLost(t *testing.T) {
	const timeouts, lost = 0, 1
	prev := HaltTimeout.Swap(int64(20 * time.Millisecond))
	defer HaltTimeout.Store(prev)
	ev := HaltEvents{Timeouts: timeouts, LostWakeups: lost}
	served := func() bool { return true } // the hand-over came before the watchdog
	for _, tc := range []struct {
		name     string
		kick     bool
		want     kick.Result
		wantLost uint64
	}{
		{"late kick", true, kick.Kicked, 0},
		{"no kick", false, kick.TimedOut, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := lockstat.New("test", "test", []string{"timeouts", "lost"})
			for _, b := range []kick.Backend{kick.Futex, kick.Park} {
				st.Reset()
				w := kick.NewWaiter(b)
				w.Arm()
				done := make(chan struct{})
				go func() {
					defer close(done)
					if !tc.kick {
						return
					}
					// The kick comes only after the watchdog fired.
					for st.Sum()[timeouts] == 0 {
						time.Sleep(time.Millisecond)
					}
					w.Kick()
				}()
				res := Halt(st, w, ev, served)
				<-done
				sum := st.Sum()
				if res != tc.want || sum[timeouts] != 1 || sum[lost] != tc.wantLost {
					t.Errorf("%v: Halt = %v, timeouts %d, lost %d; want %v, 1, %d",
						b, res, sum[timeouts], sum[lost], tc.want, tc.wantLost)
				}
			}
		})
	}
}
