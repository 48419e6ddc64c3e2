//go:build linux

package pvlock

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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

// openSchedstat opens /proc/self/task/<tid>/schedstat for repeated reads
// (preadSchedstat) by VCPU.CondRelock's steal checks.
func openSchedstat(tid int) (int, error) {
	return unix.Open("/proc/self/task/"+strconv.Itoa(tid)+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// preadSchedstat reads the schedstat file fd from its start into buf.
func preadSchedstat(fd int, buf []byte) (int, error) { return unix.Pread(fd, buf, 0) }

// closeSchedstat closes a descriptor of openSchedstat.
func closeSchedstat(fd int) { unix.Close(fd) }

// gettid returns the calling thread's Linux thread id, which identifies a
// running vCPU (VCPU.threadID).
func gettid() int { return unix.Gettid() }
