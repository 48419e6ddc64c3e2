package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/ticket"
)

// TestNamedLockSeries: a named lock's counts come out under its name, the
// unnamed locks' under name="".
func TestNamedLockSeries(t *testing.T) {
	named, unnamed := ticket.New(ticket.Name("orders")), ticket.New()
	for range 4096 {
		named.Lock()
		named.Unlock()
		unnamed.Lock()
		unnamed.Unlock()
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "pvlock_acquisitions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["lock"] == "ticket" && labels["mode"] == "pv" {
				got[labels["name"]] = m.GetCounter().GetValue()
			}
		}
	}
	if got["orders"] < 3*1024 || got["orders"] > 4096 {
		t.Errorf("name=orders: %v acquisitions after 4096 (series %v)", got["orders"], got)
	}
	if got[""] < 3*1024 {
		t.Errorf(`name="": %v acquisitions after at least 4096 (series %v)`, got[""], got)
	}
}
