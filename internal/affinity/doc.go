// Package affinity pins the calling OS thread to a set of CPUs
// (sched_setaffinity), with errors that say why the kernel refused. It is
// the one place that does so for pvlock's vCPUs and for the lab's host
// load; it exists on Linux only.
//
//	runtime.LockOSThread()
//	if err := affinity.Pin([]int{1}); err != nil {
//		return err
//	}
package affinity
