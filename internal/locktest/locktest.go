// Package locktest holds what the tests of the lock packages, pvlock and
// its collector share that needs the runtime: the stress harness (vCPUs
// pinned onto the host's CPUs, overcommitted, hammering one lock while
// checking mutual exclusion inside the critical section), the host's CPUs
// and VMs that fail the test instead of returning an error, runs timed
// from their first vCPU's start, scoped policy changes, and the sync.Mutex
// baseline of the uncontended benchmarks. The helpers that need no
// runtime are in internal/testkit.
package locktest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
)

// Config is one stress run.
type Config struct {
	// Overcommit is vCPUs per host CPU (ignored when VCPUs is set).
	Overcommit float64
	// VCPUs overrides the vCPU count.
	VCPUs int
	// CPUs restricts the host CPUs; nil means all.
	CPUs []int
	// Iterations is the number of acquisitions each vCPU attempts.
	Iterations int
	// Deadline bounds the run: vCPUs stop early when it passes, so a lock
	// that collapses under overcommit still finishes in bounded time.
	Deadline time.Duration
	// Work is the number of loop iterations inside the critical section.
	Work int
	// LongHoldEvery makes every n-th acquisition of a vCPU hold the lock
	// for LongHold (0: never).
	LongHoldEvery int
	// LongHold is how long a long hold lasts.
	LongHold time.Duration
}

// Result reports a stress run.
type Result struct {
	VCPUs        int           // vCPUs of the run
	Acquisitions int           // sum of per-vCPU acquisitions
	PerVCPU      []int         // acquisitions of each vCPU
	Elapsed      time.Duration // wall time of the run
}

// Stress runs cfg against lk and returns an error if mutual exclusion broke:
// the critical section keeps a plain (non-atomic) counter and an owner
// field, and checks both. The race detector also sees any overlap.
func Stress(lk sync.Locker, cfg Config) (Result, error) {
	vcfg := pvlock.Config{VCPUs: cfg.VCPUs, CPUs: cfg.CPUs}
	if cfg.VCPUs == 0 {
		var err error
		if vcfg, err = pvlock.Overcommit(cfg.Overcommit, cfg.CPUs); err != nil {
			return Result{}, err
		}
	}
	vm, err := pvlock.NewVM(vcfg)
	if err != nil {
		return Result{}, err
	}
	n := len(vm.VCPUs())
	var (
		owner   int // vCPU index+1 of the holder, 0 when free
		counter int // incremented only under the lock
		sink    int
	)
	per := make([]int, n)
	deadline := time.Now().Add(cfg.Deadline)
	start := time.Now()
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		me := v.Index() + 1
		for i := 0; i < cfg.Iterations; i++ {
			if i&63 == 0 && cfg.Deadline > 0 && time.Now().After(deadline) {
				break
			}
			lk.Lock()
			if owner != 0 {
				o := owner
				lk.Unlock()
				return fmt.Errorf("mutual exclusion broken: vCPU %d entered while vCPU %d held the lock", me, o)
			}
			owner = me
			counter++
			for w := 0; w < cfg.Work; w++ {
				sink += w
			}
			if cfg.LongHoldEvery > 0 && i%cfg.LongHoldEvery == cfg.LongHoldEvery-1 {
				time.Sleep(cfg.LongHold)
			}
			if owner != me {
				o := owner
				lk.Unlock()
				return fmt.Errorf("mutual exclusion broken: vCPU %d's critical section saw owner %d", me, o)
			}
			owner = 0
			lk.Unlock()
			per[v.Index()]++
		}
		return nil
	})
	res := Result{VCPUs: n, PerVCPU: per, Elapsed: time.Since(start)}
	for _, c := range per {
		res.Acquisitions += c
	}
	if err != nil {
		return res, err
	}
	if counter != res.Acquisitions {
		return res, fmt.Errorf("lost updates: counter %d after %d acquisitions", counter, res.Acquisitions)
	}
	_ = sink
	return res, nil
}

// UncontendedSyncMutex is the baseline of the lock packages'
// BenchmarkUncontended: one Lock+Unlock pair on a sync.Mutex nobody else
// touches.
func UncontendedSyncMutex(b *testing.B) {
	var mu sync.Mutex
	b.ReportAllocs()
	for b.Loop() {
		mu.Lock()
		mu.Unlock()
	}
}

// SetPolicy applies change to the pvlock policy and returns the function
// that puts back the policy it found: defer SetPolicy(...)() scopes a
// policy change to a test.
func SetPolicy(change func(p *pvlock.Policy)) (restore func()) {
	old := pvlock.CurrentPolicy()
	p := old
	change(&p)
	pvlock.SetPolicy(p)
	return func() { pvlock.SetPolicy(old) }
}

// RunFor runs body on every vCPU of vm, as vm.Run does, with a context
// that is done d after the first vCPU started: however late a loaded host
// starts the vCPU threads, the run lasts d.
func RunFor(vm *pvlock.VM, d time.Duration, body pvlock.Workload) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var start sync.Once
	return vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		start.Do(func() { time.AfterFunc(d, cancel) })
		return body(ctx, v)
	})
}

// Statistics turns the lock statistics (pvlock.Policy.Stats) on or off
// and returns the function that puts the policy back.
func Statistics(on bool) (restore func()) {
	return SetPolicy(func(p *pvlock.Policy) { p.Stats = on })
}

// NoPVSpin turns PV spinning off (pvlock.Policy.PVSpin), so that PV
// waiters spin without halting, and returns the function that puts the
// policy back.
func NoPVSpin() (restore func()) {
	return SetPolicy(func(p *pvlock.Policy) { p.PVSpin = false })
}

// HostCPUs returns the CPUs the process may run on (pvlock.HostCPUs),
// failing tb if they cannot be read.
func HostCPUs(tb testing.TB) []int {
	tb.Helper()
	cpus, err := pvlock.HostCPUs()
	if err != nil {
		tb.Fatal(err)
	}
	return cpus
}

// NewVM returns the VM of cfg, failing tb if cfg is refused.
func NewVM(tb testing.TB, cfg pvlock.Config) *pvlock.VM {
	tb.Helper()
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return vm
}

// Overcommitted returns a VM of factor vCPUs per host CPU (pvlock.Overcommit
// on every CPU), failing tb if there is none.
func Overcommitted(tb testing.TB, factor float64) *pvlock.VM {
	tb.Helper()
	cfg, err := pvlock.Overcommit(factor, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return NewVM(tb, cfg)
}

// LongHaltTimeout raises the halt watchdog (pvlock.Policy.HaltTimeout) to
// ten seconds for a stress run and returns the function that restores it.
// The default second can pass without any lost wake-up when the host is
// loaded by other processes, or while the Go runtime stops the world for a
// collection (hundreds of milliseconds with 256 vCPU threads under -race),
// or while an unlocker that has released but not yet kicked is preempted.
// A lost wake-up still shows: the waiter sleeps until this timeout, and
// the run counts a halt timeout.
func LongHaltTimeout() (restore func()) {
	return SetPolicy(func(p *pvlock.Policy) { p.HaltTimeout = 10 * time.Second })
}

// NamedLocks describes a lock package to CheckNamedLocks: how to make a
// lock of each mode with a name, and the unnamed statistics of a mode.
type NamedLocks struct {
	Pkg      string // the package name, the prefix of its panics
	Modes    []string
	New      func(name, mode string) sync.Locker
	Unnamed  func(mode string) *lockstat.Stats
	Name     func(name string) // the package's Name option, made and dropped
	Batch    int               // acquisitions counted at a time (the larger of the modes')
	Acquired string            // the acquisitions event
}

// CheckNamedLocks checks a package's Name option: two locks with a name
// count in that name's statistics of the mode they end up with, and not in
// the unnamed ones; a name that is not valid UTF-8 is refused with the
// package's panic.
func CheckNamedLocks(t *testing.T, c NamedLocks) {
	t.Helper()
	rounds := 4 * c.Batch
	for _, mode := range c.Modes {
		name := "named-" + mode
		before := c.Unnamed(mode).Snapshot().Events[c.Acquired]
		a, b := c.New(name, mode), c.New(name, mode)
		for range rounds {
			a.Lock()
			a.Unlock()
			b.Lock()
			b.Unlock()
		}
		var named *lockstat.Stats
		for _, s := range lockstat.All() {
			if s.Name() == name && s.Mode() == mode && s.Kind() == c.Unnamed(mode).Kind() {
				named = s
			}
		}
		if named == nil {
			t.Fatalf("%s: no statistics named %q for mode %s", c.Pkg, name, mode)
		}
		if got := named.Snapshot().Events[c.Acquired]; got < uint64(2*rounds-2*c.Batch) || got > uint64(2*rounds) {
			t.Errorf("%s %s: named acquisitions %d after %d by two locks", c.Pkg, mode, got, 2*rounds)
		}
		if d := c.Unnamed(mode).Snapshot().Events[c.Acquired] - before; d != 0 {
			t.Errorf("%s %s: the unnamed statistics counted %d of the named locks' acquisitions", c.Pkg, mode, d)
		}
	}
	func() {
		defer func() {
			r := recover()
			if msg, _ := r.(string); !strings.HasPrefix(msg, c.Pkg+": lock name") {
				t.Errorf("%s.Name of invalid UTF-8: recovered %v", c.Pkg, r)
			}
		}()
		c.Name("bad\xff")
	}()
}
