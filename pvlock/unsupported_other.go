//go:build !linux

package pvlock

import (
	"errors"
	"fmt"
	"runtime"
)

// unsupported is the error of the runtime's entry points off Linux: op
// needs vCPUs, and vCPUs need Linux. It wraps errors.ErrUnsupported.
func unsupported(op string) error {
	return fmt.Errorf("pvlock: %s: vCPUs need Linux's sched_setaffinity and futexes, not available on %s (the locks work from ordinary goroutines without them): %w",
		op, runtime.GOOS, errors.ErrUnsupported)
}

// HostCPUs returns the CPUs the calling thread may run on. Off Linux it
// returns an error that wraps errors.ErrUnsupported: without
// sched_getaffinity and sched_setaffinity there is no CPU set to pin vCPUs
// to.
func HostCPUs() ([]int, error) {
	return nil, unsupported("HostCPUs")
}

// gettid returns -1 off Linux: no thread is a vCPU, so none matches a
// vCPU's threadID (which is 0).
func gettid() int { return -1 }

// openSchedstat fails off Linux: there is no /proc schedstat to read steal
// time from.
func openSchedstat(tid int) (int, error) {
	return -1, unsupported("steal time")
}

// preadSchedstat is never reached off Linux (openSchedstat fails).
func preadSchedstat(fd int, buf []byte) (int, error) {
	return 0, unsupported("steal time")
}

// closeSchedstat is never reached off Linux (openSchedstat fails).
func closeSchedstat(fd int) {}
