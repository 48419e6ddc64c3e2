package bench_test

import (
	"context"
	"fmt"
	"os"
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

// The PV ticketlock thread's table for two locks, from rows that Measure
// (or pvbench -json) produced.
func ExampleWriteSeedTable() {
	rows := []bench.Row{
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 1, OpsPerSec: 185321, Stdev: 328},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1, OpsPerSec: 185195, Stdev: 267},
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 2, OpsPerSec: 4031, Stdev: 2707},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 2, OpsPerSec: 142412, Stdev: 7771},
	}
	if err := bench.WriteSeedTable(os.Stdout, rows, "native-ticket", "pv-ticket"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// overcommit  native-ticket  stdev  pv-ticket  stdev  %improvement
	//           1x         185321    328     185195    267          -0.1
	//           2x           4031   2707     142412   7771       +3432.9
}
