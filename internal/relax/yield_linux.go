//go:build linux && !pvlock_portable

package relax

import "golang.org/x/sys/unix"

// Yield gives the calling thread's CPU to another runnable thread on the
// same run queue, if there is one (sched_yield(2); x/sys/unix has no
// wrapper). It is the only place pvlock calls sched_yield.
func Yield() {
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
