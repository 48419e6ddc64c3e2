package report_test

import (
	"fmt"
	"os"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/report"
)

// The PV ticketlock thread's table for two locks, from rows that Measure
// (or pvbench -json) produced.
func ExampleWriteSeedTable() {
	rows := []bench.Row{
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 1, OpsPerSec: 185321, Stdev: 328},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1, OpsPerSec: 185195, Stdev: 267},
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 2, OpsPerSec: 4031, Stdev: 2707},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 2, OpsPerSec: 142412, Stdev: 7771},
	}
	if err := report.WriteSeedTable(os.Stdout, rows, "native-ticket", "pv-ticket"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// overcommit  native-ticket  stdev  pv-ticket  stdev  %improvement
	//           1x         185321    328     185195    267          -0.1
	//           2x           4031   2707     142412   7771       +3432.9
}
