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
	"strings"
	"syscall"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/report"
	"github.com/pvlock/pvlock/pvlock"
)

// labCommands are pvbench's subcommands, by name; pvbench -h lists them
// all (help.go registers help and torture). The two for the mechanisms
// beside the locks themselves:
//
//	pvbench lockbreak [flags]   short-operation latency next to a long batch, lock-break off and on (cond_resched_lock)
//	pvbench shootdown [flags]   ebizzy-like records/s with native and PV cross-vCPU calls (PV TLB flush)
var labCommands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"lockbreak": runLockBreak,
	"shootdown": runShootdown,
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

// labHeader prints what is being measured on which machine.
func labHeader(w io.Writer, name string, o labOptions) error {
	cpus := o.cpus
	if cpus == nil {
		var err error
		if cpus, err = pvlock.HostCPUs(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "pvbench %s: %s on %d CPUs %v, pinning %s, %d runs of %v per cell, %s\n",
		name, o.lock, len(cpus), cpus, o.pinning, o.runs, o.duration, runtime.Version())
	return nil
}

func runLockBreak(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pvbench lockbreak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o labOptions
	parse := labFlags(fs, &o)
	batch := fs.Duration("batch", bench.DefaultBatchWork, "CPU time of one batch under the lock")
	step := fs.Duration("step", bench.DefaultBatchStep, "work between two lock-break checks")
	if err := parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *batch <= 0 || *step <= 0 || *step > *batch {
		return fmt.Errorf("-batch (%v) and -step (%v) must be positive, the step no longer than the batch", *batch, *step)
	}
	if err := checkOutputFile("json", o.jsonPath); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := labHeader(stdout, "lockbreak", o); err != nil {
		return err
	}
	wl, _ := bench.WorkloadByName("lockbreak")
	fmt.Fprintf(stdout, "%s\n\n", wl.Doc)
	var rows []bench.LockBreakRow
	for _, oc := range o.factors {
		for _, brk := range []bool{false, true} {
			row, err := bench.MeasureLockBreak(ctx, bench.LockBreakSpec{
				Lock: o.lock, Overcommit: oc, CPUs: o.cpus, Pinning: o.pinning, Break: brk,
				Runs: o.runs, Duration: o.duration, Batch: *batch, Step: *step,
			})
			if ctx.Err() != nil { // a run cut short still returns a row
				return fmt.Errorf("lockbreak interrupted at %gx (break %v)", oc, brk)
			}
			if err != nil {
				return fmt.Errorf("lockbreak at %gx (break %v): %w", oc, brk, err)
			}
			fmt.Fprintf(stderr, "  %4gx break=%-5v  p99 %9.1f µs  %8.1f batches/s\n", oc, brk, row.P99, row.BatchesPerSec)
			rows = append(rows, row)
		}
	}
	fmt.Fprintf(stdout, "short operations' latency (lock wait + critical section) and batch throughput:\n\n")
	if err := report.WriteLockBreakTable(stdout, rows); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeFile(o.jsonPath, rows, report.WriteJSON)
	}
	return nil
}

func runShootdown(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pvbench shootdown", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o labOptions
	parse := labFlags(fs, &o)
	chunk := fs.Int("chunk", bench.DefaultChunk, "records a vCPU searches between two remaps (each remap is a shootdown)")
	record := fs.Duration("record", bench.DefaultRecordWork, "CPU time of searching one record")
	if err := parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *chunk < 1 || *record <= 0 {
		return fmt.Errorf("-chunk (%d) must be at least 1 and -record (%v) positive", *chunk, *record)
	}
	if err := checkOutputFile("json", o.jsonPath); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := labHeader(stdout, "shootdown", o); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ebizzy-like: each vCPU searches %v records and every %d records remaps its chunk under the lock,\n"+
		"shooting down the other vCPUs' cached views; native waits for every vCPU (waking halted ones), PV skips halted ones.\n\n",
		*record, *chunk)
	var rows []bench.ShootdownRow
	for _, oc := range o.factors {
		for _, mode := range []pvlock.ShootdownMode{pvlock.ShootdownNative, pvlock.ShootdownPV} {
			row, err := bench.MeasureShootdown(ctx, bench.ShootdownSpec{
				Mode: mode, Lock: o.lock, Overcommit: oc, CPUs: o.cpus, Pinning: o.pinning,
				Runs: o.runs, Duration: o.duration, Chunk: *chunk, Record: *record,
			})
			if ctx.Err() != nil { // a run cut short still returns a row
				return fmt.Errorf("shootdown interrupted at %gx (%s)", oc, mode)
			}
			if err != nil {
				return fmt.Errorf("shootdown %s at %gx: %w", mode, oc, err)
			}
			fmt.Fprintf(stderr, "  %-6s %4gx  %10.0f records/s  (stdev %.0f)\n", mode, oc, row.RecordsPerSec, row.Stdev)
			rows = append(rows, row)
		}
	}
	fmt.Fprintf(stdout, "records/s (higher is better):\n\n")
	if err := report.WriteShootdownTable(stdout, rows); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nper shootdown (targets acknowledged, kicked awake, deferred to their next entry, offline):\n\n")
	if err := report.WriteShootdownDetail(stdout, rows); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeFile(o.jsonPath, rows, report.WriteJSON)
	}
	return nil
}
