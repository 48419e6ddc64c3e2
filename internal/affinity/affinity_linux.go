//go:build linux

package affinity

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Pin pins the calling OS thread to cpus. The caller has locked its
// goroutine to the thread (runtime.LockOSThread), or the pin lands on
// whatever thread runs it next. CPUs beyond the set's range (1024) are
// not in the set, and an empty set is refused as EINVAL.
func Pin(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		hint := ""
		switch {
		case errors.Is(err, unix.EINVAL):
			hint = ": the CPUs are outside this process's cgroup cpuset or offline; choose CPUs from pvlock.HostCPUs()"
		case errors.Is(err, unix.EPERM):
			hint = ": not permitted; a seccomp or container policy forbids sched_setaffinity"
		}
		return fmt.Errorf("sched_setaffinity(%v): %w%s", cpus, err, hint)
	}
	return nil
}
