//go:build linux

package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"golang.org/x/sys/unix"
)

func TestHostLoadCheck(t *testing.T) {
	for _, h := range []HostLoad{
		{CPU: -1, Share: 0.5},
		{CPU: 0, Share: 0},
		{CPU: 0, Share: -0.1},
		{CPU: 0, Share: 0.95},
		{CPU: 0, Share: 0.5, Period: 50 * time.Microsecond},
	} {
		if _, err := h.Start(); err == nil || !strings.Contains(err.Error(), "host load") {
			t.Errorf("%+v: Start gave %v, want a host load error", h, err)
		}
	}
}

// fifoThreads returns the threads of this process that run SCHED_FIFO,
// with the CPU time each has had (schedstat's first field, ns).
func fifoThreads(t *testing.T) map[int]int64 {
	t.Helper()
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, d := range dirs {
		tid, _ := strconv.Atoi(filepath.Base(d))
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || attr.Policy != unix.SCHED_FIFO {
			continue // a thread that ended meanwhile, or an ordinary one
		}
		b, err := os.ReadFile(d + "/schedstat")
		if err != nil {
			continue
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		out[tid] = ns
	}
	return out
}

// A host load is one real-time thread pinned to its CPU that runs for
// about its share of the time, and is gone once stopped.
func TestHostLoadRunsItsShare(t *testing.T) {
	cpu := locktest.HostCPUs(t)[0]
	h := HostLoad{CPU: cpu, Share: 0.5}
	stop, err := h.Start()
	if err != nil {
		t.Fatal(err)
	}
	before := fifoThreads(t)
	if len(before) != 1 {
		stop()
		t.Fatalf("%d SCHED_FIFO threads while the load runs, want 1", len(before))
	}
	var tid int
	var ran int64
	for tid, ran = range before {
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil || set.Count() != 1 || !set.IsSet(cpu) {
		stop()
		t.Fatalf("the load's thread has affinity %v (err %v), want CPU %d alone", set, err, cpu)
	}
	const span = 300 * time.Millisecond
	time.Sleep(span)
	after := fifoThreads(t)[tid]
	stop()
	// Its share of the span, with wide margins: a real-time thread gets
	// its CPU whenever it asks, so only the busy loop's own clock bounds
	// it.
	if got := float64(after-ran) / float64(span); got < 0.3 || got > 0.7 {
		t.Errorf("the load ran %.0f%% of %v, want about 50%%", 100*got, span)
	}
	if n := len(fifoThreads(t)); n != 0 {
		t.Errorf("%d SCHED_FIFO threads after stop, want 0", n)
	}
}

// A lab cell with a host load records it in its row, and shows it as
// steal time: the vCPUs of the loaded CPU wait while the load runs.
func TestMeasureWithHostLoad(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	h := &HostLoad{CPU: cpus[len(cpus)-1], Share: 0.5}
	spec := Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1, Runs: 1,
		Duration: 200 * time.Millisecond, Warmup: -1, Load: h}
	row, err := Measure(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if row.HostLoad != h.String() {
		t.Errorf("row.HostLoad %q, want %q", row.HostLoad, h.String())
	}
	// One vCPU of len(cpus) loses half its CPU: at least a tenth of all
	// vCPU time is steal with one CPU or more, whatever the host adds.
	if want := 50.0 / float64(len(cpus)) / 5; row.StealPct < want {
		t.Errorf("steal %.1f%% with a half-loaded CPU, want at least %.1f%%", row.StealPct, want)
	}
	spec.Load = &HostLoad{CPU: 1 << 20, Share: 0.5}
	if _, err := Measure(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "not one of the vCPUs' CPUs") {
		t.Errorf("a load on a CPU the vCPUs do not use: %v, want an error naming it", err)
	}
}
