package bench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pvlock/pvlock/bench"
)

// Measure one cell: ebizzy on the PV ticket lock, two VMs sharing the
// host at 2x overcommit, and print the seed-style comparison against the
// native ticket lock.
func ExampleMeasure() {
	ctx := context.Background()
	var rows []bench.Row
	for _, lock := range []string{"native-ticket", "pv-ticket"} {
		row, err := bench.Measure(ctx, bench.Spec{
			Workload: "ebizzy", Lock: lock, Overcommit: 2, VMs: 2,
			Runs: 3, Duration: 500 * time.Millisecond, Seed: 1,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		rows = append(rows, row)
	}
	bench.WriteSeedTable(os.Stdout, rows, "native-ticket", "pv-ticket")
}
