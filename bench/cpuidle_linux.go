package bench

import "os"

// readCPUTimes returns the idle and total ticks of cpus since boot, or
// zero times if /proc/stat cannot be read or parsed: the row then
// reports no idle share.
func readCPUTimes(cpus []int) cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	t, err := parseProcStat(string(b), cpus)
	if err != nil {
		return cpuTimes{}
	}
	return t
}
