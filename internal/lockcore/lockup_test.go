package lockcore

import (
	"testing"
	"time"

	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

func TestParseGoid(t *testing.T) {
	for in, want := range map[string]uint64{
		"goroutine 17 [running]:\n": 17, "goroutine 1 [": 1, "gorout": 0, "goroutine x": 0, "": 0,
	} {
		if got := parseGoid([]byte(in)); got != want {
			t.Errorf("parseGoid(%q) = %d, want %d", in, got, want)
		}
	}
	if goid() == 0 {
		t.Error("goid() = 0")
	}
}

// A halt of a watched wait that would outlast the threshold reports at the
// threshold, once, and goes on halting until kicked.
func TestHaltReportsLockup(t *testing.T) {
	const threshold = 50 * time.Millisecond
	reports := make(chan Lockup, 4)
	SetLockupHook(func(l Lockup) { reports <- l })
	defer SetLockupHook(nil)
	SetLockupThreshold(threshold)
	defer SetLockupThreshold(0)
	st := lockstat.New("lockuptest", "pv", []string{"timeouts", "lost"})
	var lock int
	w := ContentionStart(&lock, st)
	if w.rec == nil || w.start == 0 {
		t.Fatalf("ContentionStart with the detector on = %+v", w)
	}
	n := LockupsSuspected()
	wt := kick.NewWaiter(kick.Park)
	wt.Arm()
	kicked := make(chan struct{})
	go func() {
		defer close(kicked)
		l := <-reports
		if l.Lock != Key(&lock) || l.Kind != "lockuptest" || l.Waited < threshold {
			t.Errorf("report %+v", l)
		}
		time.Sleep(2 * threshold) // no second report meanwhile
		wt.Kick()
	}()
	start := time.Now()
	res := Halt(st, wt, HaltEvents{Timeouts: 0, LostWakeups: 1}, func() bool { return false })
	<-kicked
	ContentionEnd(w)
	if res != kick.Kicked || time.Since(start) > time.Second {
		t.Fatalf("Halt = %v after %v, want kicked well before the watchdog", res, time.Since(start))
	}
	if got := LockupsSuspected() - n; got != 1 || len(reports) != 0 {
		t.Fatalf("%d lockups counted, %d more reports; want 1 and 0", got, len(reports))
	}
	if st.Sum()[0] != 0 {
		t.Fatal("the cut halt counted a watchdog timeout")
	}
	if currentWait() != nil {
		t.Fatal("the wait is still registered")
	}
}
