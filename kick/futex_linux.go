//go:build linux && !pvlock_portable

package kick

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// haveFutex says whether this build has the Futex backend: on Linux,
// unless the pvlock_portable tag selects the portable, park-only code.
const haveFutex = true

// Futex operations. golang.org/x/sys/unix defines SYS_FUTEX but neither a
// wrapper nor the operation constants, so they are spelled out here with the
// values from linux/futex.h.
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait blocks the calling thread while *addr == val, for at most
// timeout when timeout > 0. It returns nil when woken (possibly spuriously),
// unix.EAGAIN when *addr != val at the time of the call, unix.EINTR after a
// signal and unix.ETIMEDOUT when the timeout expired.
//
// It must go through unix.Syscall6 and not RawSyscall6: the runtime brackets
// Syscall6 with entersyscall/exitsyscall, so a garbage collection can stop
// the world while this thread sleeps. A raw, untimed FUTEX_WAIT keeps its P
// and the next stop-the-world waits for it forever.
func futexWait(addr *uint32, val uint32, timeout time.Duration) error {
	var tsp *unix.Timespec
	if timeout > 0 {
		ts := unix.NsecToTimespec(int64(timeout))
		tsp = &ts
	}
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWaitPrivate, uintptr(val), uintptr(unsafe.Pointer(tsp)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// futexWake wakes at most n threads blocked on addr and returns how many it
// woke. FUTEX_WAKE never blocks, so the raw syscall (no scheduler bracket)
// is safe and a little cheaper.
func futexWake(addr *uint32, n int) int {
	r, _, errno := unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWakePrivate, uintptr(n), 0, 0, 0)
	if errno != 0 {
		return 0
	}
	return int(r)
}
