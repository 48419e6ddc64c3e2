package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/metrics"
)

// A Collector turns the events a lock counts into Prometheus metrics at
// scrape time. Real programs export every lock (Options{}) and serve the
// registry with promhttp; this one exports a single made-up lock kind and
// prints what a scrape would see.
func ExampleCollector() {
	stats := pvlock.NewLockStats("example", "pv", []string{"halts", "pv_kick_unlock", "pv_hash_hops"})
	stats.Inc(0, 0) // vCPU 0 halted
	stats.Inc(1, 0) // vCPU 1 halted
	stats.Inc(-1, 1)
	stats.Add(-1, 2, 3)

	c := metrics.NewCollector(metrics.Options{
		Stats: func() []*pvlock.LockStats { return []*pvlock.LockStats{stats} },
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter() == nil {
				continue
			}
			fmt.Print(mf.GetName())
			for _, l := range m.GetLabel() {
				fmt.Printf(" %s=%s", l.GetName(), l.GetValue())
			}
			fmt.Println(":", m.GetCounter().GetValue())
		}
	}
	// Output:
	// pvlock_halts_total lock=example mode=pv: 2
	// pvlock_kicks_total lock=example mode=pv: 1
	// pvlock_lock_events_total event=pv_hash_hops lock=example mode=pv: 3
}
