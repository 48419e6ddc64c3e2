//go:build !pvlock_faults

package faults

// Enabled reports whether this build injects faults (the pvlock_faults
// build tag).
const Enabled = false

// Inject marks a race window. Without the pvlock_faults tag it does
// nothing and every call to it compiles away.
func Inject(Point) {}
