package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/ticket"
)

// counters gathers the metric name from a fresh Collector over every lock
// statistics and returns its counters whose labels include match, by the
// value of the label key.
func counters(t *testing.T, name string, match map[string]string, key string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue metrics
				}
			}
			got[labels[key]] = m.GetCounter().GetValue()
		}
	}
	return got
}

// TestNamedLockSeries: a named lock's counts come out under its name, the
// unnamed locks' under name="".
func TestNamedLockSeries(t *testing.T) {
	named, unnamed := ticket.New(ticket.Name("orders")), ticket.New()
	// The name's counts outlive the lock: a run before this one (-count)
	// left its own.
	match := map[string]string{"lock": "ticket", "mode": "pv"}
	before := counters(t, "pvlock_acquisitions_total", match, "name")
	for range 4096 {
		named.Lock()
		named.Unlock()
		unnamed.Lock()
		unnamed.Unlock()
	}
	got := counters(t, "pvlock_acquisitions_total", match, "name")
	for k := range got {
		got[k] -= before[k]
	}
	if got["orders"] < 3*1024 || got["orders"] > 4096 {
		t.Errorf("name=orders: %v acquisitions after 4096 (series %v)", got["orders"], got)
	}
	if got[""] < 3*1024 {
		t.Errorf(`name="": %v acquisitions after at least 4096 (series %v)`, got[""], got)
	}
}
