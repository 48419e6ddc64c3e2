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

// openRunDelay fails off Linux: there are no scheduler statistics to read
// steal time from (see runDelay).
func openRunDelay(tid int) (int, error) {
	return -1, unsupported("steal time")
}

// preadRunDelay is never reached off Linux (openRunDelay fails).
func preadRunDelay(fd int) (int64, bool) { return 0, false }

// closeRunDelay is never reached off Linux (openRunDelay fails).
func closeRunDelay(fd int) {}
