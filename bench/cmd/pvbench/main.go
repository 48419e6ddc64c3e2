// Command pvbench runs pvlock's overcommit comparison: a workload on pinned
// vCPU threads at several overcommit factors, for several locks, printed
// as the PV ticketlock thread's tables.
//
// With no flags it runs lockloop at 1x, 2x, 3x and 4x for every lock the
// lab knows, three runs of a second each (about two minutes for nine
// locks), prints the headline tables and writes plots to out/:
//
//	go run ./bench/cmd/pvbench
//	go run ./bench/cmd/pvbench -workload ebizzy -oc 0.5,1,2 -locks pv-ticket,sync.Mutex -json rows.json
//	go run ./bench/cmd/pvbench -workload dbench -vms 4 -oc 2 -base ple-yield -patched pv-ticket
//
// Workloads: lockloop, ebizzy, dbench, hackbench, lockbreak (see -h). A progress bar
// is drawn on stderr when it is a terminal, one line per finished cell
// otherwise. Rows saved with -json can be reported and plotted again
// without measuring: -from rows.json. Every output (-json, -csv, -out) is
// checked before the first cell runs. An interrupt (Ctrl-C) reports and
// saves the cells that finished and exits with status 1. A usage error (an
// unknown flag or command, a bad flag value) exits with status 2.
//
// The subcommands (torture, lockbreak, shootdown, ...) are listed by
// pvbench -h and pvbench help.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/report"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pvbench:", err)
		os.Exit(exitCode(err)) // 2 for a usage error (usage.go)
	}
}

type options struct {
	workload      string
	locks         []string
	factors       []float64
	cpus          []int
	pinning       pvlock.Pinning
	vms           int
	runs          int
	rounds        int
	duration      time.Duration
	warmup        time.Duration
	seed          uint64
	params        bench.Params
	base, patched string
	jsonPath      string
	csvPath       string
	outDir        string
	fromPath      string
	haltPoll      string // "adaptive", or a fixed window ("0": off)
	yield         bool   // directed yield (pvlock.Policy.DirectedYield)
	restrict      bool   // concurrency restriction (pvlock.Policy.Restrict)
	load          *bench.HostLoad
	// set holds the flags given on the command line.
	set map[string]bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pvbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		writeUsage(fs.Output())
		fs.PrintDefaults()
	}
	o := options{set: map[string]bool{}}
	workload := fs.String("workload", "lockloop", "workload to run: "+strings.Join(bench.WorkloadNames(), ", "))
	lockList := fs.String("locks", strings.Join(locks.Names(), ","), "comma-separated locks (default: all)")
	ocList := fs.String("oc", "1,2,3,4", "comma-separated overcommit factors (vCPUs per CPU)")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "pinning: each (one CPU per vCPU, round-robin) or float (any CPU of the set)")
	fs.IntVar(&o.vms, "vms", 1, "VMs sharing the CPUs, each with its own workload instance and locks; -oc counts all their vCPUs")
	fs.IntVar(&o.runs, "runs", 3, "measured runs per cell")
	fs.IntVar(&o.rounds, "rounds", 1, "measure every cell this many times, the locks taking turns in each round, and pool each cell's runs")
	fs.DurationVar(&o.duration, "duration", time.Second, "length of each run")
	fs.DurationVar(&o.warmup, "warmup", 100*time.Millisecond, "unmeasured warm-up run per cell (0: none)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the workloads' random choices")
	fs.DurationVar(&o.params.CriticalWork, "cs", bench.DefaultCriticalWork, "lockloop: CPU time inside the critical section")
	fs.DurationVar(&o.params.OutsideWork, "outside", bench.DefaultOutsideWork, "lockloop: CPU time outside the critical section")
	fs.IntVar(&o.params.WriteEvery, "write-every", bench.DefaultWriteEvery, "rwloop: one operation in this many writes, the others read")
	fs.StringVar(&o.outDir, "out", "out", "directory for the PNG and SVG plots (empty: no plots)")
	fs.StringVar(&o.fromPath, "from", "", "measure nothing: report and plot the rows of a file written by -json (-locks and -oc select among them)")
	fs.StringVar(&o.base, "base", "native-ticket", "base lock of the seed-style table")
	fs.StringVar(&o.patched, "patched", "pv-ticket", "patched lock of the seed-style table")
	fs.StringVar(&o.jsonPath, "json", "", "also write the rows as JSON to this file")
	fs.StringVar(&o.haltPoll, "haltpoll", "adaptive", "halt-polling of PV waiters: adaptive (up to 200µs), or a fixed window such as 50us (0: off)")
	fs.BoolVar(&o.yield, "yield", true, "directed yield: a vCPU that kicks a sleeping waiter on its own CPU yields to it")
	fs.BoolVar(&o.restrict, "restrict", true, "concurrency restriction: a saturated PV lock keeps its surplus waiters outside, halted (pvlock.Policy.Restrict)")
	fs.StringVar(&o.csvPath, "csv", "", "also write the rows as CSV to this file")
	hostLoad := fs.String("hostload", "", "take a share of one CPU from the vCPUs, as a host's other guests would: CPU:PERCENT, such as 1:50\n(a real-time thread busy for that share of every 2ms; needs root)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (pvbench -h lists the commands and flags)", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.workload = *workload
	if _, err := bench.WorkloadByName(o.workload); err != nil {
		return o, err
	}
	if o.workload == "rwloop" && !o.set["locks"] {
		// rwloop compares the reader-writer locks, which the other
		// workloads' default list leaves out.
		*lockList = strings.Join(bench.RWLoopLocks, ",")
	}
	for _, name := range splitList(*lockList) {
		if _, err := locks.Lookup(name); err != nil {
			return o, err
		}
		o.locks = append(o.locks, name)
	}
	if len(o.locks) == 0 {
		return o, errors.New("-locks is empty")
	}
	if o.params.WriteEvery < 1 {
		return o, fmt.Errorf("-write-every must be at least 1, got %d", o.params.WriteEvery)
	}
	var err error
	if o.factors, err = parseFactors(*ocList); err != nil {
		return o, err
	}
	if o.cpus, err = parseCPUs(*cpuList); err != nil {
		return o, err
	}
	if o.fromPath == "" {
		if err := checkFactorVCPUs(o.factors, o.cpus); err != nil {
			return o, err
		}
	}
	if o.pinning, err = parsePinning(*pin); err != nil {
		return o, err
	}
	if o.load, err = parseHostLoad(*hostLoad); err != nil {
		return o, err
	}
	if o.runs < 1 {
		return o, fmt.Errorf("-runs must be at least 1, got %d", o.runs)
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds must be at least 1, got %d", o.rounds)
	}
	if o.duration <= 0 {
		return o, fmt.Errorf("-duration must be positive, got %v", o.duration)
	}
	if o.warmup < 0 {
		return o, fmt.Errorf("-warmup must not be negative, got %v", o.warmup)
	}
	if o.warmup == 0 {
		o.warmup = -1 // bench.Spec: negative disables the warm-up
	}
	if o.vms < 1 {
		return o, fmt.Errorf("-vms must be at least 1, got %d", o.vms)
	}
	if _, _, err := parseHaltPoll(o.haltPoll); err != nil {
		return o, err
	}
	if o.params.CriticalWork <= 0 || o.params.OutsideWork <= 0 {
		return o, fmt.Errorf("-cs and -outside must be positive, got %v and %v",
			o.params.CriticalWork, o.params.OutsideWork)
	}
	for _, name := range []string{o.base, o.patched} {
		if _, err := locks.Lookup(name); err != nil {
			return o, fmt.Errorf("-base/-patched: %w", err)
		}
	}
	return o, nil
}

// A command is a pvbench subcommand (labCommands). Its context ends on an
// interrupt (Ctrl-C) or SIGTERM, and the command then reports what it
// has; -h is flag.ErrHelp, which is no error.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

func run(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd := labCommands[args[0]] // lab.go, help.go
		if cmd == nil {
			return badUsage(fmt.Errorf("unknown command %q; commands: %s (pvbench -h says more)", args[0], strings.Join(commandNames(), ", ")))
		}
		err = cmd(ctx, args[1:], stdout, stderr)
	} else {
		err = runMain(ctx, stop, args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h printed the usage
	}
	return err
}

// runMain is the main job; stop ends the handling of interrupts.
func runMain(ctx context.Context, stop context.CancelFunc, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return badUsage(err)
	}

	// Fail before a long run, not after it, on an output nobody can write.
	if err := errors.Join(checkOutputFile("json", o.jsonPath), checkOutputFile("csv", o.csvPath),
		checkOutputDir("out", o.outDir)); err != nil {
		return err
	}

	if o.fromPath != "" {
		rows, err := readRows(o.fromPath, o)
		if err != nil {
			return err
		}
		return writeReport(o, rows, stdout)
	}
	rows, err := measure(ctx, o, stdout, stderr)
	stop() // a second interrupt while reporting ends pvbench at once
	var intr *interruptedError
	if !errors.As(err, &intr) {
		if err != nil {
			return err
		}
		return writeReport(o, rows, stdout)
	}
	if len(rows) == 0 {
		return err
	}
	fmt.Fprintf(stdout, "INTERRUPTED during %s: the tables below hold the %d of %d cells that finished.\n\n",
		intr.cell, intr.done, intr.total)
	if rerr := writeReport(o, rows, stdout); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// interruptedError is the main job's error when a signal stopped it.
type interruptedError struct {
	cell        string // the cell that was being measured
	done, total int    // cells finished, cells planned
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("interrupted during %s (cell %d of %d); the %d finished cells were reported",
		e.cell, e.done+1, e.total, e.done)
}

// measure runs every lock at every factor and returns the rows. With
// -rounds, it measures every cell once per round, the locks taking turns
// within each factor, and pools each cell's rounds (bench.MergeRows): a
// lock and the lock beside it are measured seconds apart in every round,
// so the host's slower spells fall on both. When ctx ends it returns the
// cells that finished at least one round, pooled over the rounds they
// finished, and an *interruptedError naming the cell it stopped.
func measure(ctx context.Context, o options, stdout, stderr io.Writer) ([]bench.Row, error) {
	defer pvlock.SetPolicy(pvlock.CurrentPolicy())
	applyPolicy(o)
	cpus := o.cpus
	if cpus == nil {
		var err error
		if cpus, err = pvlock.HostCPUs(); err != nil {
			return nil, err
		}
	}
	wl, _ := bench.WorkloadByName(o.workload)
	fmt.Fprintf(stdout, "pvbench: %s on %d CPUs %v, %d VM(s), pinning %s, %d runs of %v per cell (seed %d), %s, GOMAXPROCS raised per VM, halt-poll %s, directed yield %v, restriction %v\n",
		o.workload, len(cpus), cpus, o.vms, o.pinning, o.runs*o.rounds, o.duration, o.seed, runtime.Version(), o.haltPoll, o.yield, o.restrict)
	if o.rounds > 1 {
		fmt.Fprintf(stdout, "%d rounds of %d run(s) per cell, the locks taking turns in each round\n", o.rounds, o.runs)
	}
	if o.load != nil {
		fmt.Fprintf(stdout, "host load: %v\n", o.load)
	}
	fmt.Fprintf(stdout, "%s\n\n", wl.Doc)

	cells := len(o.factors) * len(o.locks)
	bar := newProgress(stderr, o.rounds*cells)
	defer bar.finish()
	rounds := make([][]bench.Row, cells) // each cell's rows, one per finished round
	for round := 1; round <= o.rounds; round++ {
		for i, oc := range o.factors {
			for j, lock := range o.locks {
				cell := fmt.Sprintf("%s %gx", lock, oc)
				if o.rounds > 1 {
					cell += fmt.Sprintf(" (round %d of %d)", round, o.rounds)
				}
				bar.show(cell)
				row, err := bench.Measure(ctx, bench.Spec{
					Workload: o.workload, Lock: lock, Overcommit: oc, CPUs: o.cpus,
					Pinning: o.pinning, VMs: o.vms, Runs: o.runs, Duration: o.duration,
					Warmup: o.warmup, Seed: o.seed, Params: o.params, Load: o.load,
				})
				// A run cut short by ctx still returns a row: it is not a
				// finished cell.
				if ctx.Err() != nil {
					rows, merr := pool(rounds)
					if merr != nil {
						return nil, merr
					}
					return rows, &interruptedError{cell: cell, done: len(rows), total: cells}
				}
				if err != nil {
					return nil, fmt.Errorf("%s at %gx: %w", lock, oc, err)
				}
				bar.step()
				bar.cellDone(cell, fmt.Sprintf("%.0f %s/s ±%.0f%%", row.OpsPerSec, row.Unit, pct(row.Stdev, row.OpsPerSec)))
				k := i*len(o.locks) + j
				rounds[k] = append(rounds[k], row)
			}
		}
	}
	return pool(rounds)
}

// pool returns the row of every cell that has finished a round, its
// rounds pooled, in the cells' order.
func pool(rounds [][]bench.Row) ([]bench.Row, error) {
	var rows []bench.Row
	for _, rs := range rounds {
		if len(rs) == 0 {
			continue
		}
		row, err := bench.MergeRows(rs)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func pct(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

// readRows loads rows saved by the main job's -json; they must be of one
// workload. -locks and -oc, when given, select among them; -workload,
// when given, must be theirs.
func readRows(path string, o options) ([]bench.Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-from: %w", err)
	}
	const want = "rows written by pvbench -json (the main job: objects with workload, lock, overcommit, unit and ops_per_sec)"
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(b, &objs); err != nil {
		return nil, fmt.Errorf("-from %s: not %s: %w", path, want, err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("-from %s holds no rows", path)
	}
	for i, obj := range objs {
		var missing []string
		for _, key := range []string{"workload", "lock", "overcommit", "unit", "ops_per_sec"} {
			if _, ok := obj[key]; !ok {
				missing = append(missing, key)
			}
		}
		if len(missing) == 0 {
			continue
		}
		kind := ""
		if _, ok := obj["lock_break"]; ok {
			kind = " (it looks like the rows of pvbench lockbreak -json)"
		} else if _, ok := obj["records_per_sec"]; ok {
			kind = " (it looks like the rows of pvbench shootdown -json)"
		}
		return nil, fmt.Errorf("-from %s: row %d lacks %s: want %s%s",
			path, i+1, strings.Join(missing, ", "), want, kind)
	}
	var rows []bench.Row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("-from %s: %w", path, err)
	}
	for _, r := range rows {
		if r.Workload != rows[0].Workload {
			return nil, fmt.Errorf("-from %s mixes workloads %s and %s", path, rows[0].Workload, r.Workload)
		}
	}
	if o.set["workload"] && o.workload != rows[0].Workload {
		return nil, fmt.Errorf("-workload %s, but -from %s holds %s rows", o.workload, path, rows[0].Workload)
	}
	if o.set["locks"] {
		if rows, err = selectRows(rows, o.locks, func(r bench.Row, l string) bool { return r.Lock == l }, "lock", path); err != nil {
			return nil, err
		}
	}
	if o.set["oc"] {
		if rows, err = selectRows(rows, o.factors, func(r bench.Row, oc float64) bool { return r.Overcommit == oc }, "overcommit", path); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// selectRows keeps the rows that match one of keys, in the file's order;
// a key without rows is an error.
func selectRows[K any](rows []bench.Row, keys []K, match func(bench.Row, K) bool, what, path string) ([]bench.Row, error) {
	var out []bench.Row
	for _, r := range rows {
		for _, k := range keys {
			if match(r, k) {
				out = append(out, r)
				break
			}
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(rows, func(r bench.Row) bool { return match(r, k) }) {
			return nil, fmt.Errorf("-from %s has no rows of %s %v", path, what, k)
		}
	}
	return out, nil
}

// writeReport prints the tables of rows and writes the requested files.
func writeReport(o options, rows []bench.Row, stdout io.Writer) error {
	workload, unit := rows[0].Workload, rows[0].Unit
	fmt.Fprintf(stdout, "%s throughput, %s/s, mean ±stdev over runs (higher is better):\n\n", workload, unit)
	if err := report.WriteHeadline(stdout, rows); err != nil {
		return err
	}
	var absent []string
	for _, name := range []string{o.base, o.patched} {
		if !slices.ContainsFunc(rows, func(r bench.Row) bool { return r.Lock == name }) && !slices.Contains(absent, name) {
			absent = append(absent, name)
		}
	}
	if len(absent) > 0 {
		fmt.Fprintf(stdout, "\nno %s vs %s table: no rows of %s; pick -base and -patched among the locks measured.\n",
			o.base, o.patched, strings.Join(absent, " and "))
	} else {
		fmt.Fprintf(stdout, "\n%s vs %s, the PV ticketlock thread's table (%s/s):\n\n", o.base, o.patched, unit)
		if err := report.WriteSeedTable(stdout, rows, o.base, o.patched); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nall rows (halts and kicks per 1000 %s; vs 1x: share of the same lock's 1x throughput;\n"+
		"idle%%: the CPUs' idle share; max/min and jain: fairness of per-vCPU lock acquisitions;\n"+
		"p50/p99/max: time to acquire, sampled 1 in %d):\n\n",
		unit, bench.SampleEvery)
	if err := report.WriteMatrix(stdout, rows); err != nil {
		return err
	}
	if err := writeFile(o.jsonPath, rows, report.WriteJSON); err != nil {
		return err
	}
	if err := writeFile(o.csvPath, rows, report.WriteCSV); err != nil {
		return err
	}
	if o.outDir != "" {
		files, err := report.WritePlots(o.outDir, rows)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nplots: %s\n", strings.Join(files, " "))
	}
	return nil
}

// parseHaltPoll reads -haltpoll: "adaptive", or a fixed window.
func parseHaltPoll(v string) (window time.Duration, adaptive bool, err error) {
	if v == "adaptive" {
		return kick.DefaultHaltPoll, true, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false, fmt.Errorf("-haltpoll: %q is neither adaptive nor a non-negative duration", v)
	}
	return d, false, nil
}

// applyPolicy sets the waiting policy the main job measures with.
func applyPolicy(o options) {
	window, adaptive, _ := parseHaltPoll(o.haltPoll)
	p := pvlock.CurrentPolicy()
	p.HaltPoll, p.HaltPollAdaptive = window, adaptive
	p.DirectedYield = o.yield
	p.Restrict = o.restrict
	pvlock.SetPolicy(p)
}
