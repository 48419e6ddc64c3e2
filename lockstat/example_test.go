package lockstat_test

import (
	"fmt"

	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/ticket"
)

// A lock package returns the statistics of each of its modes; a Snapshot
// sums them, and Sub gives the activity between two snapshots.
func Example() {
	st := ticket.Stats(ticket.ModePV)
	before := st.Snapshot()
	var mu ticket.Lock
	mu.Lock()
	mu.Unlock()
	d := st.Snapshot().Sub(before)
	fmt.Println(d.Kind, d.Mode, d.Get(ticket.Halts), "halts")
	// Output: ticket pv 0 halts
}

// All lists the statistics of every lock kind and mode in use, as the
// Prometheus collector exports them.
func ExampleAll() {
	_ = ticket.Stats(ticket.ModeNative)
	for _, s := range lockstat.All() {
		if s.Kind() == "ticket" && s.Name() == "" {
			fmt.Println(s.Kind(), s.Mode())
		}
	}
	// Output:
	// ticket pv
	// ticket native
}
