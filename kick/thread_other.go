//go:build !linux || pvlock_portable

package kick

// threadID has no portable thread id to give: off Linux, and on Linux with
// the pvlock_portable tag, a goroutine can be bound only where
// internal/curg reads its address (amd64, arm64); elsewhere Bind reports
// errors.ErrUnsupported.
func threadID() (uintptr, bool) { return 0, false }
