//go:build !linux

package bench

// readCPUTimes returns zero times: only Linux reports per-CPU idle time
// here (/proc/stat), and the row then reports no idle share.
func readCPUTimes(cpus []int) cpuTimes { return cpuTimes{} }
