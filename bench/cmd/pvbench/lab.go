package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/report"
	"github.com/pvlock/pvlock/pvlock"
)

// labCommands are pvbench's subcommands, by name; pvbench -h lists them
// all (help.go registers help and torture): the two for the mechanisms
// beside the locks themselves and the sweep of the waiting policy.
//
//	pvbench lockbreak [flags]   short-operation latency next to a long batch, lock-break off and on (cond_resched_lock)
//	pvbench shootdown [flags]   ebizzy-like records/s with native and PV cross-vCPU calls (PV TLB flush)
//	pvbench sweep [flags]       the adaptive waiting policy against fixed spin thresholds and halt-poll windows
//	pvbench rwroles [flags]     rwloop's readers and writers apart: rates, fairness and waits by role, every RW lock
var labCommands = map[string]command{
	"lockbreak": runLockBreak,
	"shootdown": runShootdown,
	"sweep":     runSweep,
	"rwroles":   runRWRoles,
}

// labOptions are the flags the subcommands share.
type labOptions struct {
	factors  []float64
	cpus     []int
	pinning  pvlock.Pinning
	runs     int
	duration time.Duration
	lock     string
	jsonPath string
}

// labFlags declares the shared flags on fs; the returned function parses
// args and validates them.
func labFlags(fs *flag.FlagSet, o *labOptions) func(args []string) error {
	ocList := fs.String("oc", "1,2,3,4", "comma-separated overcommit factors (vCPUs per CPU)")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "pinning: each (one CPU per vCPU, round-robin) or float (any CPU of the set)")
	fs.IntVar(&o.runs, "runs", 3, "measured runs per cell")
	fs.DurationVar(&o.duration, "duration", time.Second, "length of each run")
	fs.StringVar(&o.lock, "lock", "pv-ticket", "lock: "+strings.Join(locks.Names(), ", "))
	fs.StringVar(&o.jsonPath, "json", "", "also write the rows as JSON to this file")
	return func(args []string) error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		if _, err := locks.Lookup(o.lock); err != nil {
			return err
		}
		var err error
		if o.factors, err = parseFactors(*ocList); err != nil {
			return err
		}
		if o.cpus, err = parseCPUs(*cpuList); err != nil {
			return err
		}
		if err := checkFactorVCPUs(o.factors, o.cpus); err != nil {
			return err
		}
		if o.pinning, err = parsePinning(*pin); err != nil {
			return err
		}
		if o.runs < 1 {
			return fmt.Errorf("-runs must be at least 1, got %d", o.runs)
		}
		if o.duration <= 0 {
			return fmt.Errorf("-duration must be positive, got %v", o.duration)
		}
		return nil
	}
}

// labCommand is a subcommand that measures a mechanism beside the locks
// themselves: the shared flags and its own, a row of type R per factor
// and variant V, and its tables.
type labCommand[V, R any] struct {
	name     string
	variants []V
	// header names what the command measures in its first line; empty:
	// the -lock flag's lock.
	header string
	// flags declares the command's own flags; the function it returns
	// checks them once they are parsed.
	flags func(fs *flag.FlagSet) (check func() error)
	// intro writes what the command measures, after the header.
	intro   func(w io.Writer)
	measure func(ctx context.Context, cell bench.Spec, v V) (R, error)
	// cell names a cell in errors: cut short by an interrupt, or failed.
	cell func(oc float64, v V) (interrupted, failed string)
	// progress is the line written to stderr when a cell is done.
	progress func(oc float64, v V, row R) string
	tables   func(w io.Writer, rows []R) error
}

func (c labCommand[V, R]) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pvbench "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	setCommandUsage(fs, c.name)
	var o labOptions
	parse := labFlags(fs, &o)
	check := c.flags(fs)
	if err := parse(args); err != nil {
		return badUsage(err)
	}
	if err := check(); err != nil {
		return badUsage(err)
	}
	if err := checkOutputFile("json", o.jsonPath); err != nil {
		return err
	}
	cpus := o.cpus
	if cpus == nil {
		var err error
		if cpus, err = pvlock.HostCPUs(); err != nil {
			return err
		}
	}
	what := c.header
	if what == "" {
		what = o.lock
	}
	fmt.Fprintf(stdout, "pvbench %s: %s on %d CPUs %v, pinning %s, %d runs of %v per cell, %s\n",
		c.name, what, len(cpus), cpus, o.pinning, o.runs, o.duration, runtime.Version())
	c.intro(stdout)
	var rows []R
	for _, oc := range o.factors {
		for _, v := range c.variants {
			row, err := c.measure(ctx, bench.Spec{Lock: o.lock, Overcommit: oc, CPUs: o.cpus, Pinning: o.pinning,
				Runs: o.runs, Duration: o.duration}, v)
			interrupted, failed := c.cell(oc, v)
			if ctx.Err() != nil { // a run cut short still returns a row
				return errors.New(interrupted)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", failed, err)
			}
			fmt.Fprintln(stderr, c.progress(oc, v, row))
			rows = append(rows, row)
		}
	}
	if err := c.tables(stdout, rows); err != nil {
		return err
	}
	return writeFile(o.jsonPath, rows, report.WriteJSON)
}

func runLockBreak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var batch, step *time.Duration
	return labCommand[bool, bench.LockBreakRow]{
		name:     "lockbreak",
		variants: []bool{false, true},
		flags: func(fs *flag.FlagSet) func() error {
			batch = fs.Duration("batch", bench.DefaultBatchWork, "CPU time of one batch under the lock")
			step = fs.Duration("step", bench.DefaultBatchStep, "work between two lock-break checks")
			return func() error {
				if *batch <= 0 || *step <= 0 || *step > *batch {
					return fmt.Errorf("-batch (%v) and -step (%v) must be positive, the step no longer than the batch", *batch, *step)
				}
				return nil
			}
		},
		intro: func(w io.Writer) {
			wl, _ := bench.WorkloadByName("lockbreak")
			fmt.Fprintf(w, "%s\n\n", wl.Doc)
		},
		measure: func(ctx context.Context, cell bench.Spec, brk bool) (bench.LockBreakRow, error) {
			return bench.MeasureLockBreak(ctx, bench.LockBreakSpec{Spec: cell, Break: brk, Batch: *batch, Step: *step})
		},
		cell: func(oc float64, brk bool) (string, string) {
			return fmt.Sprintf("lockbreak interrupted at %gx (break %v)", oc, brk), fmt.Sprintf("lockbreak at %gx (break %v)", oc, brk)
		},
		progress: func(oc float64, brk bool, row bench.LockBreakRow) string {
			return fmt.Sprintf("  %4gx break=%-5v  p99 %9.1f µs  %8.1f batches/s", oc, brk, row.P99, row.BatchesPerSec)
		},
		tables: func(w io.Writer, rows []bench.LockBreakRow) error {
			fmt.Fprintf(w, "short operations' latency (lock wait + critical section) and batch throughput:\n\n")
			return report.WriteLockBreakTable(w, rows)
		},
	}.run(ctx, args, stdout, stderr)
}

func runShootdown(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var chunk *int
	var record *time.Duration
	return labCommand[pvlock.ShootdownMode, bench.ShootdownRow]{
		name:     "shootdown",
		variants: []pvlock.ShootdownMode{pvlock.ShootdownNative, pvlock.ShootdownPV},
		flags: func(fs *flag.FlagSet) func() error {
			chunk = fs.Int("chunk", bench.DefaultChunk, "records a vCPU searches between two remaps (each remap is a shootdown)")
			record = fs.Duration("record", bench.DefaultRecordWork, "CPU time of searching one record")
			return func() error {
				if *chunk < 1 || *record <= 0 {
					return fmt.Errorf("-chunk (%d) must be at least 1 and -record (%v) positive", *chunk, *record)
				}
				return nil
			}
		},
		intro: func(w io.Writer) {
			fmt.Fprintf(w, "ebizzy-like: each vCPU searches %v records and every %d records remaps its chunk under the lock,\n"+
				"shooting down the other vCPUs' cached views; native waits for every vCPU (waking halted ones), PV skips halted ones.\n\n",
				*record, *chunk)
		},
		measure: func(ctx context.Context, cell bench.Spec, mode pvlock.ShootdownMode) (bench.ShootdownRow, error) {
			return bench.MeasureShootdown(ctx, bench.ShootdownSpec{Spec: cell, Mode: mode, Chunk: *chunk, Record: *record})
		},
		cell: func(oc float64, mode pvlock.ShootdownMode) (string, string) {
			return fmt.Sprintf("shootdown interrupted at %gx (%s)", oc, mode), fmt.Sprintf("shootdown %s at %gx", mode, oc)
		},
		progress: func(oc float64, mode pvlock.ShootdownMode, row bench.ShootdownRow) string {
			return fmt.Sprintf("  %-6s %4gx  %10.0f records/s  (stdev %.0f)", mode, oc, row.RecordsPerSec, row.Stdev)
		},
		tables: func(w io.Writer, rows []bench.ShootdownRow) error {
			fmt.Fprintf(w, "records/s (higher is better):\n\n")
			if err := report.WriteShootdownTable(w, rows); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nper shootdown (targets acknowledged, kicked awake, deferred to their next entry, offline):\n\n")
			return report.WriteShootdownDetail(w, rows)
		},
	}.run(ctx, args, stdout, stderr)
}

// runRWRoles is `pvbench rwroles`: the rwloop workload with its readers and
// writers measured apart, for every reader-writer lock of the lab side by
// side (its -lock flag is not used).
func runRWRoles(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var writeEvery *int
	return labCommand[string, bench.RWLoopRow]{
		name:     "rwroles",
		variants: bench.RWLoopLocks,
		header:   strings.Join(bench.RWLoopLocks, ","),
		flags: func(fs *flag.FlagSet) func() error {
			writeEvery = fs.Int("write-every", bench.DefaultWriteEvery, "one write per this many operations of each vCPU")
			return func() error {
				if *writeEvery < 1 {
					return fmt.Errorf("-write-every must be at least 1, got %d", *writeEvery)
				}
				return nil
			}
		},
		intro: func(w io.Writer) {
			wl, _ := bench.WorkloadByName("rwloop")
			fmt.Fprintf(w, "%s\n\n", wl.Doc)
		},
		measure: func(ctx context.Context, cell bench.Spec, lock string) (bench.RWLoopRow, error) {
			cell.Lock = lock
			cell.Params.WriteEvery = *writeEvery
			return bench.MeasureRWLoop(ctx, bench.RWLoopSpec{Spec: cell})
		},
		cell: func(oc float64, lock string) (string, string) {
			return fmt.Sprintf("rwroles interrupted at %gx (%s)", oc, lock), fmt.Sprintf("rwroles %s at %gx", lock, oc)
		},
		progress: func(oc float64, lock string, row bench.RWLoopRow) string {
			return fmt.Sprintf("  %-13s %4gx  %10.0f ops/s  writer max wait %v", lock, oc, row.OpsPerSec, time.Duration(row.Writers.LatMax))
		},
		tables: func(w io.Writer, rows []bench.RWLoopRow) error {
			fmt.Fprintf(w, "rwloop by role (ops/s higher is better; waits from RLock or Lock to holding the lock):\n\n")
			return writeRWRolesTable(w, rows)
		},
	}.run(ctx, args, stdout, stderr)
}

// writeRWRolesTable writes rwroles' rows, each with its throughput as a
// share of sync.RWMutex's at the same overcommit.
func writeRWRolesTable(w io.Writer, rows []bench.RWLoopRow) error {
	base := map[float64]float64{}
	for _, r := range rows {
		if r.Lock == "sync.RWMutex" {
			base[r.Overcommit] = r.OpsPerSec
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lock\toc\tvCPUs\tops/s\tvs RWMutex\treads/s\twrites/s\tread max/min\twrite max/min\tread p99\twrite p99\twrite max\t")
	for _, r := range rows {
		vs := "-"
		if b := base[r.Overcommit]; b > 0 {
			vs = fmt.Sprintf("%.2f", r.OpsPerSec/b)
		}
		fmt.Fprintf(tw, "%s\t%gx\t%d\t%.0f\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t%v\t%v\t%v\t\n",
			r.Lock, r.Overcommit, r.VCPUs, r.OpsPerSec, vs, r.Readers.PerSec, r.Writers.PerSec,
			r.Readers.Fairness, r.Writers.Fairness, time.Duration(r.Readers.LatP99), time.Duration(r.Writers.LatP99),
			time.Duration(r.Writers.LatMax))
	}
	return tw.Flush()
}

// runSweep is `pvbench sweep`: the adaptive waiting policy against fixed
// spin thresholds and fixed halt-poll windows.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	spec, o, err := parseSweep(args, stderr)
	if err != nil {
		return badUsage(err)
	}
	if err := errors.Join(checkOutputFile("json", o.jsonPath), checkOutputDir("out", o.outDir)); err != nil {
		return err
	}
	maxPoll := pvlock.CurrentPolicy().HaltPoll
	fmt.Fprintf(stdout, "pvbench sweep: %s, %s, %v, %d run(s) of %v per cell, halt-poll ceiling %v, pinning %s, %s\n",
		strings.Join(spec.Workloads, ","), strings.Join(spec.Locks, ","), spec.Factors, spec.Cell.Runs, spec.Cell.Duration,
		maxPoll, spec.Cell.Pinning, runtime.Version())
	fmt.Fprintf(stdout, "Each setting fixes one knob and leaves the other adaptive: spin=N is a fixed spin threshold of N polls,\n"+
		"haltpoll=D a fixed halt-poll window of D (0: no polling); adaptive is the default policy.\n\n")
	spec.Progress = func(done, total int, label string) {
		fmt.Fprintf(stderr, "  [%d/%d] %s\n", done+1, total, label)
	}
	rows, err := bench.Sweep(ctx, spec)
	if len(rows) > 0 {
		if werr := report.WriteSweepTable(stdout, rows); werr != nil {
			return werr
		}
		if werr := writeFile(o.jsonPath, rows, report.WriteJSON); werr != nil {
			return werr
		}
		if o.outDir != "" {
			files, perr := report.WriteThroughputPlots(o.outDir, report.SweepPlotRows(rows))
			if perr != nil {
				return perr
			}
			fmt.Fprintf(stdout, "\nplots: %d files in %s\n", len(files), o.outDir)
		}
	}
	return err
}

// sweepOutputs are the files "pvbench sweep" writes.
type sweepOutputs struct{ jsonPath, outDir string }

// parseSweep parses and checks the flags of "pvbench sweep"; every error
// it returns is a mistake in the command line.
func parseSweep(args []string, stderr io.Writer) (bench.SweepSpec, sweepOutputs, error) {
	var o sweepOutputs
	fs := flag.NewFlagSet("pvbench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setCommandUsage(fs, "sweep")
	wlList := fs.String("workloads", "lockloop,ebizzy", "comma-separated workloads")
	lockList := fs.String("locks", "pv-ticket,pv-qspin,pv-qspin-nosteal", "comma-separated PV locks")
	ocList := fs.String("oc", "1,2,3,4", "comma-separated overcommit factors (vCPUs per CPU)")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "pinning: each or float")
	thresholds := fs.String("thresholds", joinInts(bench.DefaultSweepThresholds), "comma-separated fixed spin thresholds, polls")
	polls := fs.String("haltpolls", joinDurations(bench.DefaultSweepHaltPolls), "comma-separated fixed halt-poll windows")
	confirm := fs.Int("confirm", 3, "rounds of each cell's confirmation: adaptive and the best fixed setting again, alternated (0: none)")
	runs := fs.Int("runs", 1, "measured runs per cell")
	duration := fs.Duration("duration", 500*time.Millisecond, "length of each run")
	seed := fs.Uint64("seed", 1, "seed of the workloads' random choices")
	fs.StringVar(&o.jsonPath, "json", "", "also write the rows as JSON to this file")
	fs.StringVar(&o.outDir, "out", "out", "directory for the plots (empty: no plots)")
	spec := bench.SweepSpec{}
	if err := fs.Parse(args); err != nil {
		return spec, o, err
	}
	if fs.NArg() > 0 {
		return spec, o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	spec = bench.SweepSpec{Workloads: splitList(*wlList), Locks: splitList(*lockList)}
	var err error
	if spec.Factors, err = parseFactors(*ocList); err != nil {
		return spec, o, err
	}
	if spec.Cell.CPUs, err = parseCPUs(*cpuList); err != nil {
		return spec, o, err
	}
	if spec.Cell.Pinning, err = parsePinning(*pin); err != nil {
		return spec, o, err
	}
	for _, s := range splitList(*thresholds) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return spec, o, fmt.Errorf("-thresholds: %q is not a number of polls", s)
		}
		spec.Thresholds = append(spec.Thresholds, n)
	}
	for _, s := range splitList(*polls) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return spec, o, fmt.Errorf("-haltpolls: %w", err)
		}
		spec.HaltPolls = append(spec.HaltPolls, d)
	}
	if *runs < 1 || *duration <= 0 {
		return spec, o, fmt.Errorf("-runs (%d) must be at least 1 and -duration (%v) positive", *runs, *duration)
	}
	spec.Confirm = *confirm
	spec.Cell.Runs, spec.Cell.Duration, spec.Cell.Seed = *runs, *duration, *seed
	return spec, o, spec.Validate()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func joinDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}
