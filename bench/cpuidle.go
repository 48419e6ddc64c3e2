package bench

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// cpuTimes is what /proc/stat reports of a set of CPUs, in clock ticks:
// the time they were idle (idle and iowait) and their whole time.
type cpuTimes struct{ idle, total uint64 }

// sub returns the ticks from c to later.
func (c cpuTimes) sub(earlier cpuTimes) cpuTimes {
	return cpuTimes{idle: c.idle - earlier.idle, total: c.total - earlier.total}
}

// parseProcStat sums the idle and total ticks of cpus in the text of
// /proc/stat: the "cpuN" lines, whose first eight fields are user, nice,
// system, idle, iowait, irq, softirq and steal. Every CPU of cpus must
// have its line.
func parseProcStat(text string, cpus []int) (cpuTimes, error) {
	var t cpuTimes
	found := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][len("cpu"):])
		if err != nil || !slices.Contains(cpus, n) {
			continue
		}
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: %s: field %d: %w", f[0], i+1, err)
			}
			t.total += v[i]
		}
		t.idle += v[3] + v[4]
		found++
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, fmt.Errorf("/proc/stat: %w", err)
	}
	if found != len(cpus) {
		return cpuTimes{}, fmt.Errorf("/proc/stat: %d of the CPUs %v listed", found, cpus)
	}
	return t, nil
}

// idlePct returns the idle share of c in percent, or -1 if c holds no
// time (the platform reports none).
func (c cpuTimes) idlePct() float64 {
	if c.total == 0 {
		return -1
	}
	return 100 * float64(c.idle) / float64(c.total)
}
