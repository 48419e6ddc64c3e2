package qspin

import (
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/lockstat"
)

// TestStatsOff checks that no event is counted while statistics are off.
func TestStatsOff(t *testing.T) {
	defer locktest.Statistics(false)()
	before := Stats(ModePV).Snapshot()
	var l Lock
	for i := 0; i < 3*batch; i++ {
		l.Lock()
		l.Unlock()
	}
	if d := Stats(ModePV).Snapshot().Sub(before).Get(Acquisitions); d != 0 {
		t.Fatalf("%d acquisitions counted with statistics off", d)
	}
}

// TestWakeLatency checks the mean wake-up latency of a snapshot, and that
// it is 0 without wakes.
func TestWakeLatency(t *testing.T) {
	s := lockstat.Snapshot{Events: map[string]uint64{PVKickWake: 4, PVLatencyWake: 4000}}
	if got := WakeLatency(s); got != time.Microsecond {
		t.Fatalf("WakeLatency = %v, want 1µs", got)
	}
	s.Events[PVKickWake] = 0
	if got := WakeLatency(s); got != 0 {
		t.Fatalf("WakeLatency with no wakes = %v", got)
	}
}
