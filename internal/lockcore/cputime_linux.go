//go:build linux && !pvlock_portable

package lockcore

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time the calling thread has run, in
// nanoseconds, plus one, so that 0 stays "not read"; 0 if the clock cannot
// be read. It is a system call (the vDSO serves no thread clock), and
// Gate.turnOver reads it only on a deep queue's slow paths.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano() + 1
}
