package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/pvlock/pvlock/bench"
)

// WriteJSON writes rows (of the main job, lockbreak, shootdown or the
// sweep) as an indented JSON array: pvbench's -json files.
func WriteJSON[R any](w io.Writer, rows []R) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// csvHeader names the columns of WriteCSV, the JSON field names.
var csvHeader = []string{"workload", "lock", "overcommit", "vcpus", "pcpus", "runs", "ops_per_sec", "stdev",
	"halts", "kicks", "passive", "steal_pct", "idle_pct", "fairness_max_min", "vms", "unit", "jain", "lat_p50_ns", "lat_p99_ns", "lat_max_ns"}

// WriteCSV writes rows as CSV with a header line.
func WriteCSV(w io.Writer, rows []bench.Row) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for _, r := range rows {
		f := func(format string, v any) string { return fmt.Sprintf(format, v) }
		cw.Write([]string{r.Workload, r.Lock, f("%g", r.Overcommit), strconv.Itoa(r.VCPUs), strconv.Itoa(r.PCPUs),
			strconv.Itoa(r.Runs), f("%.1f", r.OpsPerSec), f("%.1f", r.Stdev), f("%.4f", r.Halts), f("%.4f", r.Kicks),
			f("%.4f", r.Passive), f("%.2f", r.StealPct), f("%.2f", r.IdlePct), f("%.3f", r.Fairness), strconv.Itoa(r.VMs), r.Unit, f("%.4f", r.Jain),
			f("%d", r.LatP50), f("%d", r.LatP99), f("%d", r.LatMax)})
	}
	cw.Flush()
	return cw.Error()
}
