package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Improvement returns the percentage by which patched beats base
// ((patched-base)/base·100), as the PV ticketlock thread reports it.
func Improvement(base, patched float64) float64 {
	if base == 0 {
		return math.Inf(1)
	}
	return (patched - base) / base * 100
}

// find returns the row of lock at overcommit oc.
func find(rows []Row, lock string, oc float64) (Row, bool) {
	for _, r := range rows {
		if r.Lock == lock && r.Overcommit == oc {
			return r, true
		}
	}
	return Row{}, false
}

func factors(rows []Row) []float64 {
	var out []float64
	seen := map[float64]bool{}
	for _, r := range rows {
		if !seen[r.Overcommit] {
			seen[r.Overcommit] = true
			out = append(out, r.Overcommit)
		}
	}
	return out
}

func lockOrder(rows []Row) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Lock] {
			seen[r.Lock] = true
			out = append(out, r.Lock)
		}
	}
	return out
}

// WriteSeedTable writes the PV ticketlock thread's table for one pair of
// locks: base and patched throughput with their standard deviations and
// the improvement, one line per overcommit factor.
func WriteSeedTable(w io.Writer, rows []Row, base, patched string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "overcommit\t%s\tstdev\t%s\tstdev\t%%improvement\t\n", base, patched)
	for _, oc := range factors(rows) {
		b, ok1 := find(rows, base, oc)
		p, ok2 := find(rows, patched, oc)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(tw, "%gx\t%.0f\t%.0f\t%.0f\t%.0f\t%+.1f\t\n", oc, b.OpsPerSec, b.Stdev, p.OpsPerSec, p.Stdev,
			Improvement(b.OpsPerSec, p.OpsPerSec))
	}
	return tw.Flush()
}

// WriteHeadline writes the comparison at a glance: one line per lock, one
// column per overcommit factor, mean throughput with its stdev as a
// percentage of the mean.
func WriteHeadline(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "lock\t")
	ocs := factors(rows)
	for _, oc := range ocs {
		fmt.Fprintf(tw, "%gx\t", oc)
	}
	fmt.Fprintln(tw)
	for _, lock := range lockOrder(rows) {
		fmt.Fprintf(tw, "%s\t", lock)
		for _, oc := range ocs {
			r, ok := find(rows, lock, oc)
			switch {
			case !ok:
				fmt.Fprint(tw, "-\t")
			case r.OpsPerSec > 0:
				fmt.Fprintf(tw, "%.0f ±%.0f%%\t", r.OpsPerSec, 100*r.Stdev/r.OpsPerSec)
			default:
				fmt.Fprintf(tw, "%.0f\t", r.OpsPerSec)
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteMatrix writes every row: throughput, stdev, its share of the same
// lock's 1x throughput, halts and kicks per 1000 operations, steal,
// halt-polls per 1000 operations with the share that caught their kick
// (hit%) and the share a runnable sibling cut short (invalid%), fairness
// (max/min and Jain's index) and acquisition latency.
func WriteMatrix(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unit := "ops"
	if len(rows) > 0 && rows[0].Unit != "" {
		unit = rows[0].Unit
	}
	fmt.Fprintf(tw, "lock\tovercommit\tvCPUs\t%s/s\tstdev\tvs 1x\thalts/1k\tkicks/1k\tpolls/1k\thit%%\tinvalid%%\tsteal%%\tmax/min\tjain\tp50\tp99\tmax\t\n", unit)
	for _, lock := range lockOrder(rows) {
		one, hasOne := find(rows, lock, 1)
		for _, oc := range factors(rows) {
			r, ok := find(rows, lock, oc)
			if !ok {
				continue
			}
			rel := "-"
			if hasOne && one.OpsPerSec > 0 {
				rel = fmt.Sprintf("%.0f%%", 100*r.OpsPerSec/one.OpsPerSec)
			}
			fmt.Fprintf(tw, "%s\t%gx\t%d\t%.0f\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%.1f\t%.2f\t%.3f\t%s\t%s\t%s\t\n", lock, oc, r.VCPUs,
				r.OpsPerSec, r.Stdev, rel, r.Halts, r.Kicks, r.Polls, r.PollHitPct, r.PollInvalidPct, r.StealPct, r.Fairness,
				r.Jain, FormatNanos(r.LatP50), FormatNanos(r.LatP99), FormatNanos(r.LatMax))
		}
	}
	return tw.Flush()
}

// FormatNanos prints a latency in nanoseconds with a readable unit.
func FormatNanos(ns uint64) string {
	switch {
	case ns < 1000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1000000:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	case ns < 1000000000:
		return fmt.Sprintf("%.2fms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.2fs", float64(ns)/1e9)
}

// WriteJSON writes rows as a JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// WriteCSV writes rows as CSV with a header line.
func WriteCSV(w io.Writer, rows []Row) error {
	fmt.Fprintln(w, "workload,lock,overcommit,vcpus,pcpus,runs,ops_per_sec,stdev,halts,kicks,steal_pct,fairness_max_min,"+
		"vms,unit,jain,lat_p50_ns,lat_p99_ns,lat_max_ns")
	for _, r := range rows {
		_, err := fmt.Fprintf(w, "%s,%s,%g,%d,%d,%d,%.1f,%.1f,%.4f,%.4f,%.2f,%.3f,%d,%s,%.4f,%d,%d,%d\n",
			csvField(r.Workload), csvField(r.Lock), r.Overcommit, r.VCPUs, r.PCPUs, r.Runs,
			r.OpsPerSec, r.Stdev, r.Halts, r.Kicks, r.StealPct, r.Fairness,
			r.VMs, csvField(r.Unit), r.Jain, r.LatP50, r.LatP99, r.LatMax)
		if err != nil {
			return err
		}
	}
	return nil
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
