//go:build !linux || pvlock_portable

package kick

import "time"

// haveFutex says whether this build has the Futex backend. Off Linux, and
// on Linux with the pvlock_portable tag, it does not: NewWaiter gives a
// Park waiter for either backend, so futexWait and futexWake are never
// reached.
const haveFutex = false

// futexWait is never called in this build (no Waiter has the Futex
// backend); it panics rather than return as if woken.
func futexWait(addr *uint32, val uint32, timeout time.Duration) error {
	panic("kick: futex wait in a build without futexes")
}

// futexWake is never called in this build (no Waiter has the Futex
// backend); it panics rather than lose a wake-up.
func futexWake(addr *uint32, n int) int {
	panic("kick: futex wake in a build without futexes")
}
