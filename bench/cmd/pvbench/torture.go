package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/bench/torture"
)

// errTortureFailed is returned when a torture run ends in FAILURE, and
// errTortureInterrupted when a signal ended it early, so that pvbench
// exits non-zero: an interrupted torture proved less than it was asked.
var (
	errTortureFailed      = errors.New("torture: FAILURE")
	errTortureInterrupted = errors.New("torture: INTERRUPTED")
)

// parseTorture parses the flags of "pvbench torture" into validated
// torture.Configs (with defaults filled in), one per -oc factor, run one
// after the other. The seed is drawn from the clock unless -seed is
// given; the report prints it either way.
func parseTorture(args []string, stderr io.Writer) ([]torture.Config, error) {
	fs := flag.NewFlagSet("pvbench torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: pvbench torture [flags]\n\n"+
			"Tortures one lock, like the kernel's locktorture: writer vCPUs at an overcommit\n"+
			"hammer it with random critical sections, long holds, stutter and shuffle, while\n"+
			"the torture checks mutual exclusion, lost wake-ups and starvation. The last line\n"+
			"is \"End of test: SUCCESS\", \"End of test: FAILURE: ...\" (exit status 1) or, after an\n"+
			"interrupt, \"End of test: INTERRUPTED: ...\" (exit status 1). With several -oc factors\n"+
			"the lock is tortured at each in turn.\n\n")
		fs.PrintDefaults()
	}
	var c torture.Config
	lock := fs.String("lock", "pv-ticket", "lock to torture: "+strings.Join(locks.TortureNames(), ", "))
	ocList := fs.String("oc", "2", "comma-separated overcommit factors: writer vCPUs per CPU (1-8 is the useful range), one run each")
	fs.IntVar(&c.VCPUs, "vcpus", 0, "number of writer vCPUs; overrides -oc")
	fs.IntVar(&c.Readers, "readers", 0, "rw mode (locktorture's rw_lock): this many reader vCPUs beside the writers; the lock needs a read side (sync.RWMutex, native-rwlock, pv-rwlock, pv-rwlock-short)")
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
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("torture: unexpected arguments %q", fs.Args())
	}
	factors, err := parseFactors(*ocList)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	lk, err := torture.LookupLock(*lock)
	if err != nil {
		return nil, err
	}
	c.Lock = lk
	c.Seed = uint64(time.Now().UnixNano())
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			c.Seed = *seed
		}
	})
	if c.CPUs, err = parseCPUs(*cpuList); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	if c.Pinning, err = parsePinning(*pin); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	if c.VCPUs != 0 {
		if len(factors) > 1 {
			return nil, fmt.Errorf("torture: -vcpus %d makes one run; it cannot go with the -oc list %v", c.VCPUs, factors)
		}
		// -vcpus overrides -oc: one run
	} else if err := checkFactorVCPUs(factors, c.CPUs); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	var cfgs []torture.Config
	for _, oc := range factors {
		c.Overcommit = oc
		cfg, err := c.WithDefaults()
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs, nil
}

// runTorture runs "pvbench torture": the reports go to stdout, and a
// FAILURE or an interrupt is returned as an error.
// An interrupt ends the run early, with the usual report.
func runTorture(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfgs, err := parseTorture(args, stderr)
	if err != nil {
		return badUsage(err)
	}
	return tortureAll(ctx, cfgs, stdout)
}

// tortureAll runs the configurations in turn, stopping at the first
// failure or interrupt.
func tortureAll(ctx context.Context, cfgs []torture.Config, stdout io.Writer) error {
	for i, cfg := range cfgs {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		cfg.Out = stdout
		res, err := torture.Run(ctx, cfg)
		if err != nil {
			return err
		}
		at := fmt.Sprintf("%s at %d vCPUs", res.Lock, res.VCPUs)
		if !res.OK() {
			return fmt.Errorf("%w: %s: %s", errTortureFailed, at, strings.Join(res.Failures, "; "))
		}
		if res.Interrupted {
			return fmt.Errorf("%w: %s stopped after %v of %v (run %d of %d)",
				errTortureInterrupted, at, res.Elapsed.Round(time.Millisecond), cfg.Duration, i+1, len(cfgs))
		}
	}
	return nil
}
