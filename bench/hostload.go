package bench

import (
	"fmt"
	"time"
)

// HostLoad takes a share of one CPU away from the lab's vCPUs, as the
// other guests of a host take it from a VM's vCPU, with no steal time
// reported to the guest. A real-time thread (SCHED_FIFO, priority 1)
// pinned to the CPU runs a busy loop for Share of every Period and sleeps
// for the rest; while it runs, no vCPU thread runs on that CPU.
//
// It reproduces what a shared host does unasked: its two CPUs can run at
// 0.55-1.84 times each other's speed, changing from one second to the
// next (docs/lab/restrict/cpuspeed.py). A lock whose acquisitions follow
// which vCPUs run then splits them by CPU, and the fairness of a lab run
// depends on the host's load at the time; with a HostLoad it depends on
// the load asked for.
//
// A real-time thread needs CAP_SYS_NICE (root), and the kernel's
// real-time throttling (sched_rt_runtime_us, 95% by default) caps Share.
type HostLoad struct {
	CPU    int           // the CPU to load
	Share  float64       // the share of each Period the load runs, in (0, 0.9]
	Period time.Duration // one busy-and-sleep cycle; 0 means DefaultHostLoadPeriod
}

// DefaultHostLoadPeriod is HostLoad's period when none is given: about a
// scheduler time slice here, so that a vCPU is kept off its CPU for about
// as long as a host's other vCPU would keep it.
const DefaultHostLoadPeriod = 2 * time.Millisecond

// MaxHostLoadShare is the largest HostLoad.Share: the kernel throttles
// real-time threads at 95% of each second by default, and a load at the
// cap would measure the throttling rather than the load.
const MaxHostLoadShare = 0.9

// Check returns an error for a HostLoad that cannot run: a share outside
// (0, MaxHostLoadShare], a negative CPU or period, or a period too short to
// split (under 100µs).
func (h HostLoad) Check() error {
	switch {
	case h.CPU < 0:
		return fmt.Errorf("host load: CPU %d is not a CPU number", h.CPU)
	case !(h.Share > 0 && h.Share <= MaxHostLoadShare):
		return fmt.Errorf("host load: share %g is outside (0, %g]", h.Share, MaxHostLoadShare)
	case h.Period != 0 && h.Period < 100*time.Microsecond:
		return fmt.Errorf("host load: period %v is shorter than 100µs", h.Period)
	}
	return nil
}

// String describes h as the lab's reports print it.
func (h HostLoad) String() string {
	return fmt.Sprintf("CPU %d loaded %.0f%% (a real-time thread, %v period)", h.CPU, h.Share*100, h.period())
}

func (h HostLoad) period() time.Duration {
	if h.Period == 0 {
		return DefaultHostLoadPeriod
	}
	return h.Period
}

// busy returns how long each period the load runs.
func (h HostLoad) busy() time.Duration { return time.Duration(float64(h.period()) * h.Share) }
