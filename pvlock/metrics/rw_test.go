package metrics

import (
	"testing"

	"github.com/pvlock/pvlock/qspin"
)

// TestRWLockRoleSeries: a reader-writer lock's acquisitions come out by
// role, under its name.
func TestRWLockRoleSeries(t *testing.T) {
	l := qspin.NewRW(qspin.Name("routes"))
	match := map[string]string{"lock": "qrwlock", "mode": "pv", "name": "routes"}
	before := counters(t, "pvlock_rw_acquisitions_total", match, "role") // a run before this one (-count) left its own
	for range 4096 {
		l.RLock()
		l.RUnlock()
	}
	for range 2048 {
		l.Lock()
		l.Unlock()
	}
	got := counters(t, "pvlock_rw_acquisitions_total", match, "role")
	for k := range got {
		got[k] -= before[k]
	}
	if got["reader"] != 4096 || got["writer"] != 2048 {
		t.Errorf("name=routes acquisitions by role %v, want reader 4096 and writer 2048", got)
	}
}
