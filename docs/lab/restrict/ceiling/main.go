// Command ceiling measures the fairness the scheduler alone allows: every
// vCPU runs the lockloop's work (CPU time outside a critical section) with
// no lock at all, and the ratio of the most to the fewest iterations per
// vCPU is the best max/min any lock could reach at that overcommit.
//
//	go run ./docs/lab/restrict/ceiling -oc 4,16,128
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvlock/pvlock/pvlock"
)

func main() {
	ocs := flag.String("oc", "4,16,128", "comma-separated overcommit factors (vCPUs per CPU)")
	work := flag.Duration("work", 10500*time.Nanosecond, "CPU time per iteration (lockloop: 10µs outside, 0.5µs inside)")
	d := flag.Duration("duration", time.Second, "length of each run")
	runs := flag.Int("runs", 3, "runs per factor")
	flag.Parse()
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
	fmt.Printf("scheduler fairness with no lock: %d CPUs, %v of work per iteration, %d runs of %v\n", len(cpus), *work, *runs, *d)
	fmt.Printf("%6s %6s %10s %10s %10s\n", "oc", "vCPUs", "max/min", "jain", "min iters")
	for _, f := range strings.Split(*ocs, ",") {
		oc, err := strconv.Atoi(f)
		if err != nil || oc < 1 {
			fmt.Fprintf(os.Stderr, "ceiling: bad -oc %q\n", f)
			os.Exit(2)
		}
		for range *runs {
			counts, err := run(oc*len(cpus), *work, *d)
			if err != nil {
				fmt.Fprintln(os.Stderr, "ceiling:", err)
				os.Exit(1)
			}
			lo, hi := slices.Min(counts), slices.Max(counts)
			var sum, sq float64
			for _, c := range counts {
				sum += float64(c)
				sq += float64(c) * float64(c)
			}
			fmt.Printf("%5dx %6d %10.2f %10.3f %10d\n", oc, len(counts), float64(hi)/float64(max(lo, 1)), sum*sum/(float64(len(counts))*sq), lo)
		}
	}
}

// run runs n vCPUs for d, each spinning work per iteration, and returns
// each one's iterations.
func run(n int, work, d time.Duration) ([]uint64, error) {
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: n})
	if err != nil {
		return nil, err
	}
	counts := make([]uint64, n)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	iters := calibrate(work)
	err = vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		var c uint64
		for ctx.Err() == nil {
			sink += spin(iters)
			c++
		}
		counts[v.Index()] = c
		return nil
	})
	return counts, err
}

var sink uint64

// spin is CPU work: n rounds of a multiply-add the compiler cannot drop.
//
//go:noinline
func spin(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// calibrate returns the rounds of spin that take d on this machine.
func calibrate(d time.Duration) int {
	const probe = 1 << 20
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		sink += spin(probe)
		best = min(best, time.Since(start))
	}
	return max(1, int(float64(probe)*float64(d)/float64(best)))
}
