//go:build linux

package pvlock

import (
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
)

// HostCPUs returns the CPUs the calling thread may run on, in ascending
// order (sched_getaffinity). This is the default set vCPUs are pinned to.
func HostCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pvlock: read allowed CPUs (sched_getaffinity): %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, errors.New("pvlock: sched_getaffinity returned an empty CPU set")
	}
	return cpus, nil
}

// checkCPUs verifies that cpus is non-empty, free of duplicates and a
// subset of the allowed set, and returns a sorted copy.
func checkCPUs(cpus []int) ([]int, error) {
	allowed, err := HostCPUs()
	if err != nil {
		return nil, err
	}
	if len(cpus) == 0 {
		return allowed, nil
	}
	ok := make(map[int]bool, len(allowed))
	for _, c := range allowed {
		ok[c] = true
	}
	seen := make(map[int]bool, len(cpus))
	out := make([]int, 0, len(cpus))
	for _, c := range cpus {
		if c < 0 {
			return nil, fmt.Errorf("pvlock: CPU %d is negative", c)
		}
		if !ok[c] {
			return nil, fmt.Errorf("pvlock: CPU %d is not in this process's allowed set %v (see taskset/cgroup cpuset)", c, allowed)
		}
		if seen[c] {
			return nil, fmt.Errorf("pvlock: CPU %d listed twice", c)
		}
		seen[c] = true
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}
