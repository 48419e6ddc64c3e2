//go:build linux && !pvlock_portable

package kick

import "golang.org/x/sys/unix"

// threadID identifies the calling thread by its Linux thread id (gettid),
// for Bind and Current where internal/curg cannot read the goroutine.
func threadID() (uintptr, bool) { return uintptr(unix.Gettid()), true }
