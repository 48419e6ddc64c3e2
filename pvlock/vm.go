//go:build linux

package pvlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/affinity"
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
	"golang.org/x/sys/unix"
)

// Overcommit returns the Config of a VM with round(factor·len(cpus)) vCPUs
// on cpus (nil: HostCPUs): factor 2 on 2 CPUs is 4 vCPUs. Factors below 1
// undercommit the CPUs.
func Overcommit(factor float64, cpus []int) (Config, error) {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return Config{}, fmt.Errorf("pvlock: overcommit factor %v must be a positive number", factor)
	}
	if cpus == nil {
		var err error
		if cpus, err = HostCPUs(); err != nil {
			return Config{}, err
		}
	}
	n := int(math.Round(factor * float64(len(cpus))))
	if n < 1 {
		n = 1
	}
	return Config{VCPUs: n, CPUs: append([]int(nil), cpus...)}, nil
}

// VM is a group of vCPUs that run one workload together. A VM can be run
// any number of times, but not twice at once.
type VM struct {
	name    string
	cpus    []int
	vcpus   []*VCPU
	running atomic.Bool
	calls   callRegistry // open Shootdowns (shootdown.go)
}

var vmSeq atomic.Int64

// NewVM validates cfg and returns a VM ready to Run.
func NewVM(cfg Config) (*VM, error) {
	if cfg.VCPUs <= 0 {
		return nil, fmt.Errorf("pvlock: a VM needs at least one vCPU, got %d", cfg.VCPUs)
	}
	if cfg.VCPUs > MaxVCPUs {
		return nil, fmt.Errorf("pvlock: %d vCPUs exceed the limit of %d (MaxVCPUs)", cfg.VCPUs, MaxVCPUs)
	}
	if cfg.Pinning != PinEach && cfg.Pinning != PinFloat {
		return nil, fmt.Errorf("pvlock: unknown pinning policy %d", int(cfg.Pinning))
	}
	if cfg.FirstCPU < 0 {
		return nil, fmt.Errorf("pvlock: FirstCPU %d is negative", cfg.FirstCPU)
	}
	cpus, err := checkCPUs(cfg.CPUs)
	if err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("vm%d", vmSeq.Add(1)-1)
	}
	vm := &VM{name: name, cpus: cpus}
	for i := 0; i < cfg.VCPUs; i++ {
		v := &VCPU{vm: vm, index: i, id: -1, cpu: -1}
		// Created here rather than on the first run, so that observers
		// (such as a metrics scrape) may read it while the VM starts.
		v.waiter = kick.NewWaiter(kick.Futex)
		v.waiter.Hook = (*haltHook)(v)
		v.locks.Init(v.waiter, v.Poll)
		if cfg.Pinning == PinEach {
			v.cpu = cpus[(cfg.FirstCPU+i)%len(cpus)]
		}
		vm.vcpus = append(vm.vcpus, v)
	}
	return vm, nil
}

// Name returns the VM's name.
func (vm *VM) Name() string { return vm.name }

// CPUs returns the physical CPUs of the VM.
func (vm *VM) CPUs() []int { return append([]int(nil), vm.cpus...) }

// VCPUs returns the VM's vCPUs, in index order.
func (vm *VM) VCPUs() []*VCPU { return append([]*VCPU(nil), vm.vcpus...) }

// Workload is the code a vCPU runs. It should return when ctx is done.
type Workload func(ctx context.Context, v *VCPU) error

// Run starts every vCPU (each on its own locked and pinned OS thread), waits
// until all are pinned, runs fn on each of them together and returns when
// all have returned. If any vCPU fails to start, or fn returns an error,
// panics or exits by runtime.Goexit, ctx is cancelled for the others and
// the first error is returned: a panic is a *PanicError, which keeps the
// stack of the panic, and a Goexit (what t.Fatal, t.FailNow and t.Skip do
// on a vCPU) wraps ErrGoexit. The run ends once every other vCPU has
// returned, so workloads should return when ctx is done. When Run returns,
// every vCPU thread has exited.
func (vm *VM) Run(ctx context.Context, fn Workload) error {
	if !vm.running.CompareAndSwap(false, true) {
		return fmt.Errorf("pvlock: VM %s is already running", vm.name)
	}
	defer vm.running.Store(false)

	n := len(vm.vcpus)
	if err := takeIDs(vm.vcpus); err != nil {
		return err
	}
	defer releaseIDs(vm.vcpus)
	reserveProcs(n)
	defer releaseProcs(n)
	raiseThreadLimit()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		ready   sync.WaitGroup // every vCPU pinned (or failed)
		done    sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	fail := func(err error) {
		errOnce.Do(func() { first = err })
		cancel()
	}
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for _, v := range vm.vcpus {
		go v.run(ctx, fn, start, &ready, &done, fail)
	}
	ready.Wait()
	close(start)
	done.Wait()
	return first
}

// RunAll runs several VMs at once on the same host and returns when all
// have stopped. An error in one VM stops every VM; the first error is
// returned.
func RunAll(ctx context.Context, fn Workload, vms ...*VM) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(vms))
	var wg sync.WaitGroup
	for i, vm := range vms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = vm.Run(ctx, fn); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

var threadLimit sync.Once

// raiseThreadLimit lifts the runtime's 10000-thread ceiling a little, so
// that MaxVCPUs vCPU threads plus the runtime's own fit.
func raiseThreadLimit() {
	threadLimit.Do(func() {
		if old := debug.SetMaxThreads(MaxVCPUs + 10000); old > MaxVCPUs+10000 {
			debug.SetMaxThreads(old)
		}
	})
}

// Global vCPU IDs index the per-vCPU slots of statistics. They are small,
// dense and reused after a VM stops.
var ids struct {
	mu   sync.Mutex
	used [MaxVCPUs]bool
	n    int
}

func takeIDs(vs []*VCPU) error {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.n+len(vs) > MaxVCPUs {
		return fmt.Errorf("pvlock: starting %d more vCPUs would exceed MaxVCPUs (%d running)", len(vs), ids.n)
	}
	next := 0
	for _, v := range vs {
		for ids.used[next] {
			next++
		}
		ids.used[next] = true
		v.id = next
	}
	ids.n += len(vs)
	return nil
}

func releaseIDs(vs []*VCPU) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for _, v := range vs {
		ids.used[v.id] = false
		v.id = -1
	}
	ids.n -= len(vs)
}

// VCPU is one virtual CPU: a goroutine locked to an OS thread pinned to
// physical CPUs. Its methods may be called from any goroutine.
type VCPU struct {
	vm     *VM
	index  int
	id     int // global slot while running, -1 otherwise
	cpu    int // home CPU with PinEach, -1 with PinFloat
	tid    atomic.Int64
	waiter *kick.Waiter

	stealStart atomic.Int64 // run_delay when the vCPU started, ns
	stealEnd   atomic.Int64 // run_delay when it stopped, ns; -1 while running

	locks lockcore.VCPU // what lock waiters on this vCPU use, attached while it runs

	exec execState  // running, halted or offline, for cross-vCPU calls (vcpu.go)
	brk  breakState // lock-break bookkeeping (lockbreak.go)
}

// SiblingSpin returns the vCPU's current sibling spin window: how many
// spins its PV lock waiters spend while another vCPU homed on its CPU
// waits for the CPU (the pvlock_vcpu_sibling_spin_polls gauge).
func (v *VCPU) SiblingSpin() uint32 { return v.locks.SiblingSpin() }

// Repin moves the running vCPU's thread onto cpus (sched_setaffinity) for
// the rest of the current run; the next Run pins it by its Config again,
// and CPU keeps reporting the configured home CPU. It must be called from
// the vCPU's own workload, since it pins the calling thread; cpus should
// be a subset of the VM's CPUs.
func (v *VCPU) Repin(cpus []int) error {
	if tid := v.tid.Load(); tid == 0 || int(tid) != unix.Gettid() {
		return fmt.Errorf("pvlock: Repin of vCPU %d of %s must be called from its own workload", v.index, v.vm.name)
	}
	if len(cpus) == 0 {
		return fmt.Errorf("pvlock: Repin of vCPU %d of %s to no CPU", v.index, v.vm.name)
	}
	for _, c := range cpus {
		if c < 0 || c >= len(unix.CPUSet{})*64 {
			return fmt.Errorf("pvlock: Repin of vCPU %d of %s: CPU %d out of range", v.index, v.vm.name, c)
		}
	}
	if err := affinity.Pin(cpus); err != nil {
		return fmt.Errorf("pvlock: Repin of vCPU %d of %s: %w", v.index, v.vm.name, err)
	}
	return nil
}

func (v *VCPU) run(ctx context.Context, fn Workload, start <-chan struct{}, ready, done *sync.WaitGroup, fail func(error)) {
	// Locked for good: the goroutine exits locked, which ends the thread,
	// so a pinned thread never runs other goroutines.
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The process's main thread is the one thread Go does not end when
		// a goroutine locked to it exits: it parks it for good instead, and
		// it would stay behind pinned. A vCPU that starts there moves to
		// another thread: its successor locks one (never this one, which is
		// ours until it has) before we let this one go.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			v.runLocked(ctx, fn, start, ready, done, fail)
		}()
		<-locked
		runtime.UnlockOSThread()
		return
	}
	v.runLocked(ctx, fn, start, ready, done, fail)
}

// runLocked is the vCPU's life on the thread its goroutine is locked to,
// which is not the process's main thread.
func (v *VCPU) runLocked(ctx context.Context, fn Workload, start <-chan struct{}, ready, done *sync.WaitGroup, fail func(error)) {
	defer done.Done()
	cpus := v.vm.cpus
	if v.cpu >= 0 {
		cpus = []int{v.cpu}
	}
	if err := affinity.Pin(cpus); err != nil {
		fail(fmt.Errorf("pvlock: pin vCPU %d of %s to CPUs %v: %w", v.index, v.vm.name, cpus, err))
		ready.Done()
		return
	}
	// Attached before the waiter is bound (and detached after it is
	// unbound): a waiter this thread finds always leads to its vCPU. Attach
	// sets the waiter's Slot to the global index.
	v.locks.Attach(v.id)
	defer v.locks.Detach()
	v.waiter.SetDomain(domainOf(v))
	if err := kick.Bind(v.waiter); err != nil {
		fail(fmt.Errorf("pvlock: vCPU %d of %s: %w", v.index, v.vm.name, err))
		ready.Done()
		return
	}
	defer kick.Unbind()
	tid := unix.Gettid()
	v.tid.Store(int64(tid))
	defer v.tid.Store(0)
	d, _ := runDelay(tid)
	v.stealStart.Store(d)
	v.stealEnd.Store(-1)
	ready.Done()
	<-start
	defer func() {
		if d, err := runDelay(tid); err == nil {
			v.stealEnd.Store(d)
		} else {
			v.stealEnd.Store(v.stealStart.Load())
		}
	}()
	// goexit stays set only if the workload ends by runtime.Goexit: a
	// return clears it and a panic is recovered. Such a vCPU must fail
	// the run too, or the others would wait for a cancellation that
	// never comes.
	goexit := true
	defer func() {
		if r := recover(); r != nil {
			fail(&PanicError{VM: v.vm.name, VCPU: v.index, Value: r, Stack: debug.Stack()})
		} else if goexit {
			fail(fmt.Errorf("pvlock: vCPU %d of %s: %w", v.index, v.vm.name, ErrGoexit))
		}
	}()
	v.work(ctx, fn, fail)
	goexit = false
}

// work runs fn on the vCPU, which is online meanwhile, unless ctx is
// already done.
func (v *VCPU) work(ctx context.Context, fn Workload, fail func(error)) {
	if ctx.Err() != nil {
		return
	}
	v.enter()
	defer v.leave()
	if err := fn(ctx, v); err != nil {
		fail(fmt.Errorf("pvlock: vCPU %d of %s: %w", v.index, v.vm.name, err))
	}
}

// Steal returns the time the vCPU's thread spent runnable but waiting for a
// CPU (the run_delay of its scheduler statistics in /proc) during its last
// run: up to now while it runs, up to its end after it stopped.
func (v *VCPU) Steal() time.Duration {
	if end := v.stealEnd.Load(); end >= 0 {
		return time.Duration(end - v.stealStart.Load())
	}
	tid := v.tid.Load()
	if tid == 0 {
		return 0
	}
	d, err := runDelay(int(tid))
	if err != nil {
		return 0
	}
	return time.Duration(d - v.stealStart.Load())
}
