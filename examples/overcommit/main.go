// Command overcommit runs the same lock-heavy loop on pinned vCPU threads
// at 1x and at 3x overcommit, with a native and a PV ticket lock, and prints
// throughput, halts and steal time: the smallest demonstration of why PV
// locks exist.
//
//	go run ./examples/overcommit
//	go run ./examples/overcommit -oc 4 -duration 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

func main() {
	oc := flag.Float64("oc", 3, "overcommit factor to compare with 1x (vCPUs per CPU)")
	d := flag.Duration("duration", time.Second, "length of each run")
	flag.Parse()
	if err := checkFlags(*oc, *d, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "overcommit:", err)
		os.Exit(2)
	}
	for _, factor := range []float64{1, *oc} {
		for _, name := range []string{"native", "pv"} {
			mu := ticket.New()
			if name == "native" {
				mu = ticket.New(ticket.Native())
			}
			ops, halts, steal, n, err := run(mu, factor, *d)
			if err != nil {
				fmt.Fprintln(os.Stderr, "overcommit:", err)
				os.Exit(1)
			}
			fmt.Printf("%gx (%2d vCPUs)  %-6s ticket: %9.0f ops/s  %7d halts  steal %5.1f%%\n",
				factor, n, name, float64(ops)/d.Seconds(), halts, 100*steal.Seconds()/(d.Seconds()*float64(n)))
		}
	}
}

// checkFlags refuses what would print nonsense: a run of no length (a
// negative duration gave "-0 ops/s" and a steal above 100%), or a factor
// that is not a positive number.
func checkFlags(oc float64, d time.Duration, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	if d <= 0 {
		return fmt.Errorf("-duration %v must be positive", d)
	}
	if !(oc > 0) || math.IsInf(oc, 0) {
		return fmt.Errorf("-oc %v must be a positive number", oc)
	}
	return nil
}

// run hammers mu from factor·CPUs vCPUs for d.
func run(mu sync.Locker, factor float64, d time.Duration) (ops, halts uint64, steal time.Duration, vcpus int, err error) {
	cfg, err := pvlock.Overcommit(factor, nil)
	if err != nil {
		return
	}
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		return
	}
	var total atomic.Uint64
	shared := 0
	// The run lasts d from the start of its first vCPU, however long a
	// busy host takes to start the threads.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var startClock sync.Once
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		startClock.Do(func() { time.AfterFunc(d, cancel) })
		n := uint64(0)
		for ctx.Err() == nil {
			mu.Lock()
			for i := 0; i < 200; i++ { // a short critical section
				shared++
			}
			mu.Unlock()
			for i := 0; i < 4000; i++ { // work outside the lock
				_ = i * i
			}
			n++
		}
		total.Add(n)
		return nil
	})
	for _, v := range vm.VCPUs() {
		halts += v.Waiter().Counters().Halts
		steal += v.Steal()
	}
	return total.Load(), halts, steal, len(vm.VCPUs()), err
}
