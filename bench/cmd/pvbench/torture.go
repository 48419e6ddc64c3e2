package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pvlock/pvlock/bench/torture"
)

// errTortureFailed is returned when a torture run ends in FAILURE, so that
// pvbench exits non-zero.
var errTortureFailed = errors.New("torture: FAILURE")

// parseTorture parses the flags of "pvbench torture" into a validated
// torture.Config (with defaults filled in). The seed is drawn from the
// clock unless -seed is given; the report prints it either way.
func parseTorture(args []string, stderr io.Writer) (torture.Config, error) {
	fs := flag.NewFlagSet("pvbench torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: pvbench torture [flags]\n\n"+
			"Tortures one lock, like the kernel's locktorture: writer vCPUs at an overcommit\n"+
			"hammer it with random critical sections, long holds, stutter and shuffle, while\n"+
			"the torture checks mutual exclusion, lost wake-ups and starvation. The last line\n"+
			"is \"End of test: SUCCESS\" or \"End of test: FAILURE: ...\" (exit status 1).\n\n")
		fs.PrintDefaults()
	}
	var c torture.Config
	lock := fs.String("lock", "pv-ticket", "lock to torture: "+strings.Join(torture.LockNames(), ", "))
	fs.Float64Var(&c.Overcommit, "oc", 2, "overcommit: writer vCPUs per CPU (1-8 is the useful range)")
	fs.IntVar(&c.VCPUs, "vcpus", 0, "number of writer vCPUs; overrides -oc")
	cpuList := fs.String("cpus", "", "comma-separated physical CPUs (default: all allowed)")
	pin := fs.String("pin", "each", "initial pinning: each (one CPU per vCPU, round-robin) or float")
	fs.DurationVar(&c.Duration, "duration", time.Minute, "length of the run, e.g. 10m")
	fs.DurationVar(&c.Interval, "interval", 10*time.Second, "period of the statistics lines")
	seed := fs.Uint64("seed", 0, "random seed (default: from the clock)")
	fs.IntVar(&c.Work, "work", 32, "bound of the random work in and between critical sections, in PAUSEs")
	fs.DurationVar(&c.LongHold, "long-hold", 10*time.Millisecond, "length of an occasional long hold (0: none)")
	fs.IntVar(&c.LongHoldEvery, "long-hold-every", 100000, "one acquisition in this many (on average) holds for -long-hold")
	fs.DurationVar(&c.Stutter, "stutter", 2*time.Second, "run this long between stutter pauses of a quarter of it (0: no stutter)")
	fs.DurationVar(&c.Shuffle, "shuffle", 100*time.Millisecond, "re-pin the vCPU threads this often (0: no shuffle)")
	fs.DurationVar(&c.Watchdog, "watchdog", 0, "halt watchdog: a longer halt is a timeout, a lost wake-up if the waiter's turn had come (default: max(5s, 4 x long-hold))")
	fs.DurationVar(&c.StarveAfter, "starve-after", 0, "a wait this long while others pass 4 x vCPUs times is starvation (default 1s)")
	fs.DurationVar(&c.StallAfter, "stall-after", 0, "any wait this long is a stall (default 5 x watchdog)")
	fs.BoolVar(&c.FailUnfair, "fail-unfair", false, "fail when the busiest vCPU made over twice the acquisitions of the idlest (\"???\")")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("torture: unexpected arguments %q", fs.Args())
	}
	if c.VCPUs == 0 && !(c.Overcommit > 0) {
		// Config treats 0 as "default"; on the command line it is a mistake.
		return c, fmt.Errorf("torture: -oc %v must be a positive number", c.Overcommit)
	}
	lk, err := torture.LookupLock(*lock)
	if err != nil {
		return c, err
	}
	c.Lock = lk
	c.Seed = uint64(time.Now().UnixNano())
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			c.Seed = *seed
		}
	})
	if c.CPUs, err = parseCPUs(*cpuList); err != nil {
		return c, fmt.Errorf("torture: %w", err)
	}
	if c.Pinning, err = parsePinning(*pin); err != nil {
		return c, fmt.Errorf("torture: %w", err)
	}
	return c.WithDefaults()
}

// runTorture runs "pvbench torture": the report goes to stdout, and a
// FAILURE is returned as an error.
func runTorture(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseTorture(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	// An interrupt ends the run early, with the usual report.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Out = stdout
	res, err := torture.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("%w: %s", errTortureFailed, strings.Join(res.Failures, "; "))
	}
	return nil
}
