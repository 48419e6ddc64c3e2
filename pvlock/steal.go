package pvlock

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// runDelay reads the run-queue wait of thread tid, in nanoseconds: the
// second field of /proc/self/task/<tid>/schedstat. For a vCPU thread this
// is its steal time: runnable, but another thread had its CPU.
func runDelay(tid int) (int64, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, fmt.Errorf("pvlock: read steal time of thread %d: %w", tid, err)
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("pvlock: schedstat of thread %d: unexpected %q", tid, b)
	}
	return strconv.ParseInt(string(f[1]), 10, 64)
}
