package torture_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pvlock/pvlock/bench/torture"
)

// A short torture of the PV ticket lock at 2x overcommit, with stutter and
// shuffle. Config.Out (here unset) would receive the statistics lines.
func ExampleRun() {
	lk, err := torture.LookupLock("pv-ticket")
	if err != nil {
		panic(err)
	}
	res, err := torture.Run(context.Background(), torture.Config{
		Lock: lk, Overcommit: 2, Duration: 300 * time.Millisecond,
		Stutter: 100 * time.Millisecond, Shuffle: 20 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Lock, "OK:", res.OK(), "violations:", res.Violations, "lost wakeups:", res.LostWakeups)
	// Output: pv-ticket OK: true violations: 0 lost wakeups: 0
}
