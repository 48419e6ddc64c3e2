package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/kick"
)

func init() { labCommands["sweep"] = runSweep }

// runSweep is `pvbench sweep`: the adaptive waiting policy against fixed
// spin thresholds and fixed halt-poll windows.
func runSweep(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pvbench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wlList := fs.String("workloads", "lockloop,ebizzy", "comma-separated workloads")
	lockList := fs.String("locks", "pv-ticket,pv-qspin,pv-qspin-nosteal", "comma-separated PV locks")
	ocList := fs.String("oc", "1,2,3,4", "comma-separated overcommit factors (vCPUs per CPU)")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "pinning: each or float")
	thresholds := fs.String("thresholds", joinInts(bench.DefaultSweepThresholds), "comma-separated fixed spin thresholds, polls")
	polls := fs.String("haltpolls", joinDurations(bench.DefaultSweepHaltPolls), "comma-separated fixed halt-poll windows")
	runs := fs.Int("runs", 1, "measured runs per cell")
	duration := fs.Duration("duration", 500*time.Millisecond, "length of each run")
	seed := fs.Uint64("seed", 1, "seed of the workloads' random choices")
	jsonPath := fs.String("json", "", "also write the rows as JSON to this file")
	outDir := fs.String("out", "out", "directory for the plots (empty: no plots)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	spec := bench.SweepSpec{Workloads: splitList(*wlList), Locks: splitList(*lockList)}
	var err error
	if spec.Factors, err = parseFactors(*ocList); err != nil {
		return err
	}
	if spec.Cell.CPUs, err = parseCPUs(*cpuList); err != nil {
		return err
	}
	if spec.Cell.Pinning, err = parsePinning(*pin); err != nil {
		return err
	}
	for _, s := range splitList(*thresholds) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-thresholds: %q is not a number of polls", s)
		}
		spec.Thresholds = append(spec.Thresholds, n)
	}
	for _, s := range splitList(*polls) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("-haltpolls: %w", err)
		}
		spec.HaltPolls = append(spec.HaltPolls, d)
	}
	if *runs < 1 || *duration <= 0 {
		return fmt.Errorf("-runs (%d) must be at least 1 and -duration (%v) positive", *runs, *duration)
	}
	spec.Cell.Runs, spec.Cell.Duration, spec.Cell.Seed = *runs, *duration, *seed
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := errors.Join(checkOutputFile("json", *jsonPath), checkOutputDir("out", *outDir)); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	maxPoll, _ := kick.HaltPoll()
	fmt.Fprintf(stdout, "pvbench sweep: %s, %s, %v, %d run(s) of %v per cell, halt-poll ceiling %v, pinning %s, %s\n",
		strings.Join(spec.Workloads, ","), strings.Join(spec.Locks, ","), spec.Factors, *runs, *duration,
		maxPoll, spec.Cell.Pinning, runtime.Version())
	fmt.Fprintf(stdout, "Each setting fixes one knob and leaves the other adaptive: spin=N is a fixed spin threshold of N polls,\n"+
		"haltpoll=D a fixed halt-poll window of D (0: no polling); adaptive is the default policy.\n\n")
	spec.Progress = func(done, total int, label string) {
		fmt.Fprintf(stderr, "  [%d/%d] %s\n", done+1, total, label)
	}
	rows, err := bench.Sweep(ctx, spec)
	if len(rows) > 0 {
		if werr := bench.WriteSweepTable(stdout, rows); werr != nil {
			return werr
		}
		if *jsonPath != "" {
			if werr := writeFile(*jsonPath, rows, bench.WriteSweepJSON); werr != nil {
				return werr
			}
		}
		if *outDir != "" {
			files, perr := bench.WriteThroughputPlots(*outDir, bench.SweepPlotRows(rows))
			if perr != nil {
				return perr
			}
			fmt.Fprintf(stdout, "\nplots: %d files in %s\n", len(files), *outDir)
		}
	}
	return err
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
