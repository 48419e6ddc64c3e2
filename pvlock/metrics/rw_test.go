package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/qspin"
)

// TestRWLockRoleSeries: a reader-writer lock's acquisitions come out by
// role, under its name.
func TestRWLockRoleSeries(t *testing.T) {
	l := qspin.NewRW(qspin.Name("routes"))
	for range 4096 {
		l.RLock()
		l.RUnlock()
	}
	for range 2048 {
		l.Lock()
		l.Unlock()
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "pvlock_rw_acquisitions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["lock"] == "qrwlock" && labels["mode"] == "pv" && labels["name"] == "routes" {
				got[labels["role"]] = m.GetCounter().GetValue()
			}
		}
	}
	if got["reader"] != 4096 || got["writer"] != 2048 {
		t.Errorf("name=routes acquisitions by role %v, want reader 4096 and writer 2048", got)
	}
}
