package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock/metrics"
	"github.com/pvlock/pvlock/ticket"
)

// A Collector turns the events the locks count into Prometheus metrics at
// scrape time. Real programs export every lock (Options{}) and serve the
// registry with promhttp; this one exports the native ticket lock's
// statistics and prints the counters a scrape sees move.
func ExampleCollector() {
	stats := ticket.Stats(ticket.ModeNative)
	stats.Reset()
	l := ticket.New(ticket.Native())
	for range 2048 { // a native ticket lock counts its acquisitions 2048 at a time
		l.Lock()
		l.Unlock()
	}

	c := metrics.NewCollector(metrics.Options{
		Stats: func() []*lockstat.Stats { return []*lockstat.Stats{stats} },
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() == 0 {
				continue
			}
			fmt.Print(mf.GetName())
			for _, l := range m.GetLabel() {
				if l.GetValue() != "" { // name="": the unnamed locks
					fmt.Printf(" %s=%s", l.GetName(), l.GetValue())
				}
			}
			fmt.Println(":", m.GetCounter().GetValue())
		}
	}
	// Output:
	// pvlock_acquisitions_total lock=ticket mode=native: 2048
}
