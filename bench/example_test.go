package bench_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pvlock/pvlock/bench"
)

// Measure one cell: ebizzy on the PV ticket lock, two VMs sharing the
// host at 2x overcommit. The numbers depend on the machine; what was
// measured does not.
func ExampleMeasure() {
	row, err := bench.Measure(context.Background(), bench.Spec{
		Workload: "ebizzy", Lock: "pv-ticket", Overcommit: 2, VMs: 2,
		Runs: 2, Duration: 200 * time.Millisecond, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %s at %gx, %d VMs, %d runs: %s/s measured: %v\n",
		row.Workload, row.Lock, row.Overcommit, row.VMs, row.Runs, row.Unit, row.OpsPerSec > 0)
	// Output: ebizzy on pv-ticket at 2x, 2 VMs, 2 runs: records/s measured: true
}
