// Package curg identifies the calling goroutine cheaply: Pointer returns
// the address of the runtime's descriptor of the running goroutine (its
// g), read from thread-local storage in a few instructions. The address is
// unique among live goroutines and fixed for a goroutine's life, so a
// goroutine locked to its OS thread (a vCPU) can be looked up by it without
// the gettid system call, which costs about a microsecond on a virtual
// machine. A goroutine that exits may have its address reused by a later
// one: whoever keys a table by it must remove the entry before the
// goroutine exits.
package curg

// Supported reports whether Pointer works on this platform (amd64 and
// arm64, on every system); where it does not, Pointer returns 0 and
// callers fall back to the thread ID.
const Supported = supported
