package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/latency"
	"github.com/pvlock/pvlock/pvlock"
)

// runLength is the length d of a test run, or 2/5 of it in -short mode.
func runLength(d time.Duration) time.Duration {
	if testing.Short() {
		return d * 2 / 5
	}
	return d
}

// TestWorkloadsDoRealWork runs every lab workload at 1x and 2x with the PV
// ticket lock and with sync.Mutex. Measure checks each instance's
// invariants after the run (Checker) and fails on a broken one.
func TestWorkloadsDoRealWork(t *testing.T) {
	for _, wl := range []string{"lockloop", "ebizzy", "dbench", "hackbench"} {
		for _, lock := range []string{"pv-ticket", "sync.Mutex"} {
			for _, oc := range []float64{1, 2} {
				spec := Spec{Workload: wl, Lock: lock, Overcommit: oc,
					Runs: 1, Duration: runLength(150 * time.Millisecond), Warmup: -1, Seed: 42}
				row := mustMeasure(t, spec)
				for row.OpsPerSec == 0 && spec.Duration < 2*time.Second { // a loaded host starved a vCPU thread
					spec.Duration *= 2
					row = mustMeasure(t, spec)
				}
				w, _ := WorkloadByName(wl)
				if row.OpsPerSec <= 0 || row.Unit != w.Unit || row.VMs != 1 {
					t.Errorf("%s/%s/%gx: implausible row %+v", wl, lock, oc, row)
				}
				if !(row.Jain > 0 && row.Jain <= 1) || row.Fairness < 1 {
					t.Errorf("%s/%s/%gx: fairness jain=%v max/min=%v", wl, lock, oc, row.Jain, row.Fairness)
				}
				if row.LatMax == 0 || row.LatP50 > row.LatP99 || row.LatP99 > row.LatMax {
					t.Errorf("%s/%s/%gx: latency p50=%d p99=%d max=%d", wl, lock, oc, row.LatP50, row.LatP99, row.LatMax)
				}
			}
		}
	}
}

// runDirect sets a workload up on vcpus vCPUs and runs it for d, returning
// the instance for inspection.
func runDirect(t *testing.T, name string, vcpus int, d time.Duration, seed uint64, newLock func() sync.Locker) Instance {
	t.Helper()
	w, err := WorkloadByName(name)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: vcpus})
	if err != nil {
		t.Fatal(err)
	}
	// The lab's runner times d from the first vCPU's start. On a loaded
	// host a vCPU thread can still wait for its CPU longer than a short
	// run: until the instance counts some work, run again, longer.
	for limit := 16 * d; ; d *= 2 {
		inst := w.Setup(newLock(), vcpus, Params{Seed: seed, NewLock: newLock})
		_, err = runFor(context.Background(), []*pvlock.VM{vm}, d, func(v *pvlock.VCPU) func() {
			return func() { inst.Op(v) }
		})
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := inst.(UnitCounter); !ok || u.Units() > 0 || d >= limit {
			return inst
		}
	}
}

func ticketLocks() func() sync.Locker {
	k, _ := locks.Lookup("pv-ticket")
	return k.New
}

func TestHackbenchDeliversEverything(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		h := runDirect(t, "hackbench", n, runLength(150*time.Millisecond), 1, ticketLocks()).(*hackbench)
		if err := h.Check(); err != nil {
			t.Fatalf("%d vCPUs: %v", n, err)
		}
		sent, delivered := h.delivered()
		if sent == 0 || sent != delivered || h.Units() == 0 {
			t.Fatalf("%d vCPUs: sent %d, delivered %d, received during the run %d", n, sent, delivered, h.Units())
		}
		// Corrupt the books: one message too many claimed sent.
		for i := range h.vcpus {
			if h.vcpus[i].send {
				h.vcpus[i].sent[h.vcpus[i].peers[0]]++
				break
			}
		}
		if err := h.Check(); err == nil || !strings.Contains(err.Error(), "arrived") {
			t.Fatalf("%d vCPUs: Check missed a lost message: %v", n, err)
		}
	}
}

func TestHackbenchGroups(t *testing.T) {
	h := setupHackbench(new(sync.Mutex), 7, Params{}).(*hackbench)
	var roles []string
	for _, v := range h.vcpus {
		switch {
		case v.send && v.recv:
			roles = append(roles, "SR")
		case v.send:
			roles = append(roles, "S")
		default:
			roles = append(roles, "R")
		}
	}
	// Groups of four, alternating, the last group of three: S R S.
	if got := strings.Join(roles, " "); got != "S R S R S R S" {
		t.Fatalf("roles %q", got)
	}
	if !slices.Equal(h.vcpus[4].peers, []int{5}) || !slices.Equal(h.vcpus[0].peers, []int{1, 3}) {
		t.Fatalf("peers %v %v", h.vcpus[0].peers, h.vcpus[4].peers)
	}
	one := setupHackbench(new(sync.Mutex), 1, Params{}).(*hackbench)
	if !one.vcpus[0].send || !one.vcpus[0].recv {
		t.Fatal("a lone vCPU must send to itself")
	}
	// Every queue has its own lock when NewLock is given.
	var made int
	setupHackbench(new(sync.Mutex), 8, Params{NewLock: func() sync.Locker { made++; return new(sync.Mutex) }})
	if made != 3 { // four receivers: the given lock and three new ones
		t.Fatalf("NewLock called %d times, want 3", made)
	}
}

func TestDbenchTableStaysConsistent(t *testing.T) {
	d := runDirect(t, "dbench", 4, runLength(200*time.Millisecond), 3, ticketLocks()).(*dbench)
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	var ops [dbOps]uint64
	for _, c := range d.vcpus {
		for op, n := range c.ops {
			ops[op] += n
		}
	}
	for op, n := range ops {
		if n == 0 {
			t.Errorf("no %s operations", dbenchOpNames[op])
		}
	}
	if d.tab.live == 0 {
		t.Fatal("no files left in the table")
	}
	// A file moved to the wrong chain must be found.
	for b, head := range d.tab.buckets {
		if head >= 0 {
			i := head
			d.tab.buckets[b] = d.tab.files[i].next
			other := (b + 1) % len(d.tab.buckets)
			d.tab.files[i].next, d.tab.buckets[other] = d.tab.buckets[other], i
			break
		}
	}
	if err := d.Check(); err == nil {
		t.Fatal("Check missed a file in the wrong chain")
	}
}

func TestEbizzyArena(t *testing.T) {
	e := runDirect(t, "ebizzy", 3, runLength(150*time.Millisecond), 5, ticketLocks()).(*ebizzy)
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	if e.Units() == 0 || e.arena.allocs != e.Units() {
		t.Fatalf("%d records, %d allocations", e.Units(), e.arena.allocs)
	}
	a := newPageArena(10)
	p1 := a.alloc(4, 1)
	p2 := a.alloc(4, 2)
	if p1 != 0 || p2 != 4 || a.alloc(4, 3) != -1 {
		t.Fatalf("first fit: %d %d", p1, p2)
	}
	if err := a.free(p1, 4, 2); err == nil {
		t.Fatal("freeing another vCPU's pages succeeded")
	}
	if err := a.free(p1, 4, 1); err != nil {
		t.Fatal(err)
	}
	if p := a.alloc(2, 3); p != 0 {
		t.Fatalf("first fit after free: %d", p)
	}
	if p := a.alloc(3, 3); p != -1 { // 2 free at 2..3, 2 at 8..9: no run of 3
		t.Fatalf("alloc of 3 in fragments: %d", p)
	}
	e.arena.owner[0], e.arena.used[0] = 1, 1
	if err := e.Check(); err == nil {
		t.Fatal("Check missed a page still held")
	}
}

// TestSeedReproducible: one vCPU doing a fixed number of dbench operations
// makes the same choices for the same seed, other choices for another.
func TestSeedReproducible(t *testing.T) {
	run := func(seed uint64) ([dbOps]uint64, []uint64) {
		w, _ := WorkloadByName("dbench")
		d := w.Setup(new(sync.Mutex), 1, Params{Seed: seed}).(*dbench)
		vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
			for i := 0; i < 3000; i++ {
				d.Op(v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return d.vcpus[0].ops, d.vcpus[0].names
	}
	a1, n1 := run(7)
	a2, n2 := run(7)
	b, _ := run(8)
	if a1 != a2 || !slices.Equal(n1, n2) {
		t.Fatalf("seed 7 twice: %v %v", a1, a2)
	}
	if a1 == b {
		t.Fatalf("seeds 7 and 8 made the same choices: %v", a1)
	}
	if s := runSeed(1, 0, 0); s == runSeed(1, 1, 0) || s == runSeed(1, 0, 1) || s != runSeed(1, 0, 0) {
		t.Fatal("run seeds do not depend on run and VM, or are not stable")
	}
}

func TestSeveralVMsShareTheHost(t *testing.T) {
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	vms, err := newVMs(Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1.5, VMs: 2})
	if err != nil {
		t.Fatal(err)
	}
	perCPU := map[int]int{}
	total := 0
	for _, vm := range vms {
		for _, v := range vm.VCPUs() {
			perCPU[v.CPU()]++
			total++
		}
	}
	if want := int(math.Round(1.5 * float64(len(cpus)))); total != want {
		t.Fatalf("%d vCPUs, want %d", total, want)
	}
	lo, hi := total, 0
	for _, c := range cpus {
		lo, hi = min(lo, perCPU[c]), max(hi, perCPU[c])
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced placement over %v: %v", cpus, perCPU)
	}
	if d := len(vms[0].VCPUs()) - len(vms[1].VCPUs()); d < 0 || d > 1 {
		t.Fatalf("VM sizes %d and %d", len(vms[0].VCPUs()), len(vms[1].VCPUs()))
	}

	row := mustMeasure(t, Spec{Workload: "dbench", Lock: "pv-ticket", Overcommit: 2, VMs: 2,
		Runs: 2, Duration: 50 * time.Millisecond, Warmup: 20 * time.Millisecond})
	if row.VMs != 2 || row.VCPUs != 2*len(cpus) || row.OpsPerSec <= 0 || row.Runs != 2 {
		t.Fatalf("row %+v", row)
	}
	rejects(t, Measure, Spec{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 0.5, VMs: 4 * len(cpus)}) // more VMs than vCPUs
}

func TestUndercommit(t *testing.T) {
	row := mustMeasure(t, Spec{Workload: "hackbench", Lock: "sync.Mutex", Overcommit: 0.5,
		Runs: 1, Duration: 50 * time.Millisecond, Warmup: -1})
	if row.Overcommit != 0.5 || row.VCPUs < 1 || row.OpsPerSec <= 0 {
		t.Fatalf("row %+v", row)
	}
}

func TestFairnessMeasures(t *testing.T) {
	if j := Jain([]uint64{5, 5, 5, 5}); j != 1 {
		t.Errorf("equal shares: %v", j)
	}
	if j := Jain([]uint64{8, 0, 0, 0}); j != 0.25 {
		t.Errorf("one takes all: %v", j)
	}
	if j := Jain(nil); j != 1 {
		t.Errorf("nobody: %v", j)
	}
	if m := MaxMin([]uint64{10, 5, 20}); m != 4 {
		t.Errorf("max/min %v", m)
	}
	if m := MaxMin([]uint64{7, 0}); m != 7 {
		t.Errorf("starved vCPU counts as one: %v", m)
	}
}

// TestProbeCountsAndSamples: acquisitions through Acquire are charged to
// the vCPU, plain Lock calls to nobody, and both are sampled.
func TestProbeCountsAndSamples(t *testing.T) {
	m := newMeter(2)
	p := m.wrap(new(sync.Mutex))
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		n := 1000 * (v.Index() + 1)
		for i := 0; i < n; i++ {
			Acquire(p, v)
			p.Unlock()
		}
		for i := 0; i < 1600; i++ {
			p.Lock()
			p.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	acq, plain := m.acquisitions()
	if !slices.Equal(acq, []uint64{1000, 2000}) || plain != 3200 {
		t.Fatalf("acquisitions %v plain %d", acq, plain)
	}
	var h latency.Hist
	m.mergeInto(&h)
	// 3000/16 attributed samples exactly; plain ones are random, 1 in 16.
	if h.Count() < 3000/SampleEvery+50 || h.Count() > 3000/SampleEvery+400 {
		t.Fatalf("%d samples", h.Count())
	}
	r := &runResult{acq: acq, plain: plain, ops: []uint64{1, 1}}
	if !slices.Equal(r.fairnessCounts(), []uint64{1, 1}) {
		t.Fatal("fairness must fall back to ops when some acquisitions are not charged")
	}
	r.plain = 0
	if !slices.Equal(r.fairnessCounts(), acq) {
		t.Fatal("fairness must use acquisitions when all are charged")
	}
}
