package curg

const supported = true

// Pointer returns the address of the calling goroutine's g.
//
//go:noescape
func Pointer() uintptr
