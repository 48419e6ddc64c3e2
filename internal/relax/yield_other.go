//go:build !linux || pvlock_portable

package relax

import "runtime"

// Yield gives way to other runnable work. Without sched_yield (off Linux,
// or on Linux with the pvlock_portable tag) it yields the calling
// goroutine's P (runtime.Gosched): other goroutines run first, and a
// goroutine locked to its thread lets the thread sleep until the goroutine
// is scheduled again.
func Yield() {
	runtime.Gosched()
}
