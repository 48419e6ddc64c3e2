// Package report turns the lab's rows (bench.Row, bench.LockBreakRow,
// bench.ShootdownRow, bench.SweepRow) into what pvbench prints and
// writes: the PV ticketlock thread's tables, JSON, CSV and plots (PNG and
// SVG, drawn with gonum/plot). It is the only lab package that imports
// gonum; the lab itself (bench) measures and never reports, so code that
// measures does not pull the plotting in.
package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/pvlock"
)

// Improvement returns the percentage by which patched beats base
// ((patched-base)/base·100), as the PV ticketlock thread reports it.
func Improvement(base, patched float64) float64 {
	if base == 0 {
		return math.Inf(1)
	}
	return (patched - base) / base * 100
}

// distinct returns the keys of rows in the order they first appear.
func distinct[R any, K comparable](rows []R, key func(R) K) []K {
	var out []K
	for _, r := range rows {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func factors(rows []bench.Row) []float64 {
	return distinct(rows, func(r bench.Row) float64 { return r.Overcommit })
}

func lockOrder(rows []bench.Row) []string {
	return distinct(rows, func(r bench.Row) string { return r.Lock })
}

// find returns the row of lock at overcommit oc.
func find(rows []bench.Row, lock string, oc float64) (bench.Row, bool) {
	i := slices.IndexFunc(rows, func(r bench.Row) bool { return r.Lock == lock && r.Overcommit == oc })
	if i < 0 {
		return bench.Row{}, false
	}
	return rows[i], true
}

// unit is the name of the rows' operation, "ops" when they do not say.
func unit(rows []bench.Row) string {
	if len(rows) > 0 && rows[0].Unit != "" {
		return rows[0].Unit
	}
	return "ops"
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// WriteSeedTable writes the PV ticketlock thread's table for one pair of
// locks: base and patched throughput with their standard deviations and
// the improvement, one line per overcommit factor.
func WriteSeedTable(w io.Writer, rows []bench.Row, base, patched string) error {
	tw := newTable(w)
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
func WriteHeadline(w io.Writer, rows []bench.Row) error {
	tw := newTable(w)
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
// lock's 1x throughput, halts, kicks and passive waits per 1000
// operations, steal, the CPUs' idle share,
// halt-polls per 1000 operations with the share that caught their kick
// (hit%) and the share a runnable sibling cut short (invalid%), fairness
// (max/min and Jain's index) and acquisition latency.
func WriteMatrix(w io.Writer, rows []bench.Row) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "lock\tovercommit\tvCPUs\t%s/s\tstdev\tvs 1x\thalts/1k\tkicks/1k\tpassive/1k\tpolls/1k\thit%%\tinvalid%%\tsteal%%\tidle%%\tmax/min\tjain\tp50\tp99\tmax\t\n", unit(rows))
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
			fmt.Fprintf(tw, "%s\t%gx\t%d\t%.0f\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%.1f\t%s\t%.2f\t%.3f\t%s\t%s\t%s\t\n", lock, oc, r.VCPUs,
				r.OpsPerSec, r.Stdev, rel, r.Halts, r.Kicks, r.Passive, r.Polls, r.PollHitPct, r.PollInvalidPct, r.StealPct, formatPct(r.IdlePct), r.Fairness,
				r.Jain, FormatNanos(r.LatP50), FormatNanos(r.LatP99), FormatNanos(r.LatMax))
		}
	}
	return tw.Flush()
}

// formatPct prints a share in percent, or "-" for a negative one (not
// reported).
func formatPct(p float64) string {
	if p < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", p)
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

// WriteLockBreakTable writes one line per row: the short operations'
// latency and rate and the batch throughput, with lock-break off and on.
func WriteLockBreakTable(w io.Writer, rows []bench.LockBreakRow) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "overcommit\tvCPUs\tlock-break\tshort p50 µs\tp99 µs\tmax µs\tshort ops/s\tbatches/s\tstdev\tbreaks/batch\tyields/batch\t\n")
	for _, r := range rows {
		onOff := "off"
		if r.Break {
			onOff = "on"
		}
		fmt.Fprintf(tw, "%gx\t%d\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t\n", r.Overcommit, r.VCPUs, onOff,
			r.P50, r.P99, r.Max, r.ShortPerSec, r.BatchesPerSec, r.BatchStdev, r.Breaks, r.Yields)
	}
	return tw.Flush()
}

// WriteShootdownTable writes the seed's table: records/s with native and PV
// shootdowns, their standard deviations and the improvement, one line per
// overcommit factor.
func WriteShootdownTable(w io.Writer, rows []bench.ShootdownRow) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "overcommit\tvCPUs\tnative\tstdev\tpv\tstdev\t%%improvement\t\n")
	find := func(mode pvlock.ShootdownMode, oc float64) (bench.ShootdownRow, bool) {
		i := slices.IndexFunc(rows, func(r bench.ShootdownRow) bool { return r.Mode == mode.String() && r.Overcommit == oc })
		if i < 0 {
			return bench.ShootdownRow{}, false
		}
		return rows[i], true
	}
	for _, oc := range distinct(rows, func(r bench.ShootdownRow) float64 { return r.Overcommit }) {
		b, ok1 := find(pvlock.ShootdownNative, oc)
		p, ok2 := find(pvlock.ShootdownPV, oc)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(tw, "%gx\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%+.1f\t\n", oc, b.VCPUs, b.RecordsPerSec, b.Stdev,
			p.RecordsPerSec, p.Stdev, Improvement(b.RecordsPerSec, p.RecordsPerSec))
	}
	return tw.Flush()
}

// WriteShootdownDetail writes every row: the shootdown rate, the time an
// initiator spent per shootdown and how it treated its targets.
func WriteShootdownDetail(w io.Writer, rows []bench.ShootdownRow) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "mode\tovercommit\tvCPUs\trecords/s\tshootdowns/s\tµs/shootdown\tacked\tkicked\tdeferred\toffline\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%gx\t%d\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", r.Mode, r.Overcommit, r.VCPUs,
			r.RecordsPerSec, r.CallsPerSec, r.CallMicros, r.Acked, r.Kicked, r.Deferred, r.Offline)
	}
	return tw.Flush()
}

// WriteSweepTable writes one table per workload and lock: a line per
// overcommit factor with the adaptive throughput, the best fixed setting
// and its throughput, adaptive's share of that best, and then every
// setting's throughput. If the sweep confirmed its cells, the column
// "confirmed" gives adaptive's share of the best fixed setting again, from
// the confirmation rounds: the median of adaptive's rows over the median
// of the best setting's, measured side by side.
func WriteSweepTable(w io.Writer, rows []bench.SweepRow) error {
	type key struct{ wl, lock string }
	for i, k := range distinct(rows, func(r bench.SweepRow) key { return key{r.Workload, r.Lock} }) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var g, confirm []bench.SweepRow
		for _, r := range rows {
			switch {
			case (key{r.Workload, r.Lock}) != k:
			case r.Confirm > 0:
				confirm = append(confirm, r)
			default:
				g = append(g, r)
			}
		}
		fixed := slices.DeleteFunc(distinct(g, bench.SweepRow.Setting),
			func(s string) bool { return s == "adaptive" })
		unit := unit(sweepRows(g))
		fmt.Fprintf(w, "%s, %s (%s/s):\n\n", k.wl, k.lock, unit)
		tw := newTable(w)
		confirmed := ""
		if len(confirm) > 0 {
			confirmed = "\tconfirmed"
		}
		fmt.Fprintf(tw, "overcommit\tadaptive\tbest fixed\tits %s/s\tadaptive/best%s\t%s\t\n", unit, confirmed, strings.Join(fixed, "\t"))
		for _, oc := range factors(sweepRows(g)) {
			var adaptive float64
			best, bestName := -1.0, "-"
			vals := map[string]float64{}
			for _, r := range g {
				if r.Overcommit != oc {
					continue
				}
				s := r.Setting()
				vals[s] = r.OpsPerSec
				if s == "adaptive" {
					adaptive = r.OpsPerSec
				} else if r.OpsPerSec > best {
					best, bestName = r.OpsPerSec, s
				}
			}
			ratio := "-"
			if best > 0 {
				ratio = fmt.Sprintf("%.2f", adaptive/best)
			}
			fmt.Fprintf(tw, "%gx\t%.0f\t%s\t%.0f\t%s", oc, adaptive, bestName, math.Max(best, 0), ratio)
			if len(confirm) > 0 {
				fmt.Fprintf(tw, "\t%s", confirmedRatio(confirm, oc))
			}
			for _, s := range fixed {
				fmt.Fprintf(tw, "\t%.0f", vals[s])
			}
			fmt.Fprintf(tw, "\t\n")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// sweepRows returns the Rows of sweep rows.
func sweepRows(rs []bench.SweepRow) []bench.Row {
	out := make([]bench.Row, len(rs))
	for i, r := range rs {
		out[i] = r.Row
	}
	return out
}

// confirmedRatio returns adaptive's share of the best fixed setting at
// overcommit oc in the confirmation rows of one workload and lock: the
// median of adaptive's throughput over the median of the other setting's,
// or "-" if either has no row.
func confirmedRatio(confirm []bench.SweepRow, oc float64) string {
	var adaptive, best []float64
	for _, r := range confirm {
		switch {
		case r.Overcommit != oc:
		case r.Setting() == "adaptive":
			adaptive = append(adaptive, r.OpsPerSec)
		default:
			best = append(best, r.OpsPerSec)
		}
	}
	if len(adaptive) == 0 || len(best) == 0 || median(best) <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", median(adaptive)/median(best))
}

// median returns the median of xs, which must not be empty.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
