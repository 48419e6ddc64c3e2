//go:build linux

package pvlock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A thread's steal time is read from its scheduler statistics,
// /proc/self/task/<tid>/schedstat, whose second field is its run_delay:
// the time it was runnable while another thread had its CPU. This file is
// the only one that names or parses that file; the others call runDelay
// (one read) or openRunDelay and preadRunDelay (repeated reads, for
// VCPU.CondRelock's steal checks).

// schedstatPath is the scheduler statistics file of thread tid.
func schedstatPath(tid int) string { return "/proc/self/task/" + strconv.Itoa(tid) + "/schedstat" }

// errNoRunDelay is parseRunDelay's error for contents without a second
// field.
var errNoRunDelay = errors.New("no run_delay field")

// parseRunDelay returns the run_delay field of the contents b of a
// schedstat file, in nanoseconds.
func parseRunDelay(b []byte) (int64, error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errNoRunDelay
	}
	return strconv.ParseInt(string(f[1]), 10, 64)
}

// runDelay reads the run-queue wait of thread tid, in nanoseconds: the
// second field of /proc/self/task/<tid>/schedstat. For a vCPU thread this
// is its steal time: runnable, but another thread had its CPU.
func runDelay(tid int) (int64, error) {
	b, err := os.ReadFile(schedstatPath(tid))
	if err != nil {
		return 0, fmt.Errorf("pvlock: read steal time of thread %d: %w", tid, err)
	}
	d, err := parseRunDelay(b)
	if err == errNoRunDelay {
		return 0, fmt.Errorf("pvlock: schedstat of thread %d: unexpected %q", tid, b)
	}
	return d, err
}

// openRunDelay opens /proc/self/task/<tid>/schedstat for repeated reads
// (preadRunDelay) by VCPU.CondRelock's steal checks.
func openRunDelay(tid int) (int, error) {
	return unix.Open(schedstatPath(tid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// preadRunDelay reads the schedstat file fd from its start and returns its
// run_delay, in nanoseconds.
func preadRunDelay(fd int) (int64, bool) {
	var buf [96]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	d, err := parseRunDelay(buf[:n])
	return d, err == nil
}

// closeRunDelay closes a descriptor of openRunDelay.
func closeRunDelay(fd int) { unix.Close(fd) }

// gettid returns the calling thread's Linux thread id, which identifies a
// running vCPU (VCPU.threadID).
func gettid() int { return unix.Gettid() }
