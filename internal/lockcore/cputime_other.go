//go:build !linux || pvlock_portable

package lockcore

// threadCPU has no thread clock to read off Linux (and with the
// pvlock_portable tag): 0, so a vCPU's turns on a deep queue are not
// bounded (Gate.turnOver).
func threadCPU() int64 { return 0 }
