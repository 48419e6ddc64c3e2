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
// is drawn on stderr when it is a terminal. Rows saved with -json can be
// reported and plotted again without measuring: -from rows.json.
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
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/pvlock"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pvbench:", err)
		os.Exit(1)
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
	duration      time.Duration
	warmup        time.Duration
	seed          uint64
	params        bench.Params
	base, patched string
	jsonPath      string
	csvPath       string
	outDir        string
	fromPath      string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pvbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	workload := fs.String("workload", "lockloop", "workload to run: "+strings.Join(bench.WorkloadNames(), ", "))
	lockList := fs.String("locks", strings.Join(bench.LockNames(), ","), "comma-separated locks (default: all)")
	ocList := fs.String("oc", "1,2,3,4", "comma-separated overcommit factors (vCPUs per CPU)")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "pinning: each (one CPU per vCPU, round-robin) or float (any CPU of the set)")
	fs.IntVar(&o.vms, "vms", 1, "VMs sharing the CPUs, each with its own workload instance and locks; -oc counts all their vCPUs")
	fs.IntVar(&o.runs, "runs", 3, "measured runs per cell")
	fs.DurationVar(&o.duration, "duration", time.Second, "length of each run")
	fs.DurationVar(&o.warmup, "warmup", 100*time.Millisecond, "unmeasured warm-up run per cell (0: none)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the workloads' random choices")
	fs.DurationVar(&o.params.CriticalWork, "cs", bench.DefaultCriticalWork, "lockloop: CPU time inside the critical section")
	fs.DurationVar(&o.params.OutsideWork, "outside", bench.DefaultOutsideWork, "lockloop: CPU time outside the critical section")
	fs.StringVar(&o.outDir, "out", "out", "directory for the PNG and SVG plots (empty: no plots)")
	fs.StringVar(&o.fromPath, "from", "", "measure nothing: report and plot the rows of a file written by -json")
	fs.StringVar(&o.base, "base", "native-ticket", "base lock of the seed-style table")
	fs.StringVar(&o.patched, "patched", "pv-ticket", "patched lock of the seed-style table")
	fs.StringVar(&o.jsonPath, "json", "", "also write the rows as JSON to this file")
	fs.StringVar(&o.csvPath, "csv", "", "also write the rows as CSV to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.workload = *workload
	if _, err := bench.WorkloadByName(o.workload); err != nil {
		return o, err
	}
	for _, name := range splitList(*lockList) {
		if _, err := bench.Lock(name); err != nil {
			return o, err
		}
		o.locks = append(o.locks, name)
	}
	if len(o.locks) == 0 {
		return o, errors.New("-locks is empty")
	}
	var err error
	if o.factors, err = parseFactors(*ocList); err != nil {
		return o, err
	}
	if o.cpus, err = parseCPUs(*cpuList); err != nil {
		return o, err
	}
	if o.pinning, err = parsePinning(*pin); err != nil {
		return o, err
	}
	if o.runs < 1 {
		return o, fmt.Errorf("-runs must be at least 1, got %d", o.runs)
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
	if o.params.CriticalWork <= 0 || o.params.OutsideWork <= 0 {
		return o, fmt.Errorf("-cs and -outside must be positive, got %v and %v",
			o.params.CriticalWork, o.params.OutsideWork)
	}
	for _, name := range []string{o.base, o.patched} {
		if _, err := bench.Lock(name); err != nil {
			return o, fmt.Errorf("-base/-patched: %w", err)
		}
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "torture" {
		return runTorture(args[1:], stdout, stderr)
	}
	if len(args) > 0 && labCommands[args[0]] != nil {
		return labCommands[args[0]](args[1:], stdout, stderr) // lab.go
	}
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Fail before a long run, not after it, on an output nobody can write.
	for _, path := range []string{o.jsonPath, o.csvPath} {
		if path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
			return fmt.Errorf("cannot write %s: its directory does not exist", path)
		}
	}
	if o.outDir != "" {
		if err := os.MkdirAll(o.outDir, 0o755); err != nil {
			return fmt.Errorf("plot directory: %w", err)
		}
	}

	var rows []bench.Row
	if o.fromPath != "" {
		if rows, err = readRows(o.fromPath); err != nil {
			return err
		}
	} else if rows, err = measure(ctx, o, stdout, stderr); err != nil {
		return err
	}
	return report(o, rows, stdout)
}

// measure runs every lock at every factor and returns the rows.
func measure(ctx context.Context, o options, stdout, stderr io.Writer) ([]bench.Row, error) {
	cpus := o.cpus
	if cpus == nil {
		var err error
		if cpus, err = pvlock.HostCPUs(); err != nil {
			return nil, err
		}
	}
	wl, _ := bench.WorkloadByName(o.workload)
	fmt.Fprintf(stdout, "pvbench: %s on %d CPUs %v, %d VM(s), pinning %s, %d runs of %v per cell (seed %d), %s, GOMAXPROCS raised per VM\n",
		o.workload, len(cpus), cpus, o.vms, o.pinning, o.runs, o.duration, o.seed, runtime.Version())
	fmt.Fprintf(stdout, "%s\n\n", wl.Doc)

	bar := newProgress(stderr, len(o.factors)*len(o.locks))
	defer bar.finish()
	var rows []bench.Row
	for _, oc := range o.factors {
		for _, lock := range o.locks {
			bar.show(fmt.Sprintf("%s %gx", lock, oc))
			row, err := bench.Measure(ctx, bench.Spec{
				Workload: o.workload, Lock: lock, Overcommit: oc, CPUs: o.cpus,
				Pinning: o.pinning, VMs: o.vms, Runs: o.runs, Duration: o.duration,
				Warmup: o.warmup, Seed: o.seed, Params: o.params,
			})
			if err != nil {
				return nil, fmt.Errorf("%s at %gx: %w", lock, oc, err)
			}
			bar.step()
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// readRows loads rows saved with -json; they must be of one workload.
func readRows(path string) ([]bench.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []bench.Row
	if err := json.NewDecoder(f).Decode(&rows); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s holds no rows", path)
	}
	for _, r := range rows {
		if r.Workload != rows[0].Workload {
			return nil, fmt.Errorf("%s mixes workloads %s and %s", path, rows[0].Workload, r.Workload)
		}
	}
	return rows, nil
}

// report prints the tables of rows and writes the requested files.
func report(o options, rows []bench.Row, stdout io.Writer) error {
	workload, unit := rows[0].Workload, rows[0].Unit
	fmt.Fprintf(stdout, "%s throughput, %s/s, mean ±stdev over runs (higher is better):\n\n", workload, unit)
	if err := bench.WriteHeadline(stdout, rows); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%s vs %s, the PV ticketlock thread's table (%s/s):\n\n", o.base, o.patched, unit)
	if err := bench.WriteSeedTable(stdout, rows, o.base, o.patched); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nall rows (halts and kicks per 1000 %s; vs 1x: share of the same lock's 1x throughput;\n"+
		"max/min and jain: fairness of per-vCPU lock acquisitions; p50/p99/max: time to acquire, sampled 1 in %d):\n\n",
		unit, bench.SampleEvery)
	if err := bench.WriteMatrix(stdout, rows); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := writeFile(o.jsonPath, rows, bench.WriteJSON); err != nil {
			return err
		}
	}
	if o.csvPath != "" {
		if err := writeFile(o.csvPath, rows, bench.WriteCSV); err != nil {
			return err
		}
	}
	if o.outDir != "" {
		files, err := bench.WritePlots(o.outDir, rows)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nplots: %s\n", strings.Join(files, " "))
	}
	return nil
}
