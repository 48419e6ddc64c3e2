//go:build !linux

package pvlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/kick"
)

// This file is vm.go's API off Linux. vCPUs are threads pinned with
// sched_setaffinity whose halts are futex waits, so no VM can be made or
// run here: NewVM, Overcommit, Run and RunAll return an error that wraps
// errors.ErrUnsupported (see errNoVCPUs), and the types exist so that code
// using the runtime builds everywhere. The declarations mirror vm.go's;
// TestPortableAPI checks that they stay the same. Config, Pinning and
// MaxVCPUs, the same everywhere, are in config.go.

// Overcommit returns the Config of a VM with round(factor·len(cpus)) vCPUs
// on cpus. Off Linux there are no vCPUs: it returns an error that wraps
// errors.ErrUnsupported.
func Overcommit(factor float64, cpus []int) (Config, error) {
	return Config{}, unsupported("Overcommit")
}

// VM is a group of vCPUs that run one workload together. Off Linux no VM
// can be made: NewVM fails, and a zero VM has no vCPUs and does not run.
type VM struct {
	name  string
	cpus  []int
	vcpus []*VCPU
	calls callRegistry // open Shootdowns (shootdown.go)
}

// NewVM validates cfg and returns a VM ready to Run. Off Linux it returns
// an error that wraps errors.ErrUnsupported: vCPUs need Linux's
// sched_setaffinity and futexes.
func NewVM(cfg Config) (*VM, error) {
	return nil, unsupported("NewVM")
}

// Name returns the VM's name.
func (vm *VM) Name() string { return vm.name }

// CPUs returns the physical CPUs of the VM.
func (vm *VM) CPUs() []int { return append([]int(nil), vm.cpus...) }

// VCPUs returns the VM's vCPUs, in index order.
func (vm *VM) VCPUs() []*VCPU { return append([]*VCPU(nil), vm.vcpus...) }

// Workload is the code a vCPU runs. It should return when ctx is done.
type Workload func(ctx context.Context, v *VCPU) error

// Run starts every vCPU and runs fn on each of them. Off Linux it runs
// nothing and returns an error that wraps errors.ErrUnsupported.
func (vm *VM) Run(ctx context.Context, fn Workload) error {
	return unsupported("Run")
}

// ErrGoexit is wrapped by the error of a run whose workload exited by
// runtime.Goexit instead of returning, as testing's t.Fatal, t.FailNow and
// t.Skip (and b's) do when they are called on a vCPU. The vCPU counts as
// failed: Run cancels the others and returns the error.
var ErrGoexit = errors.New("the workload exited by runtime.Goexit, as t.Fatal, t.FailNow and t.Skip do")

// PanicError is the error of a run whose workload panicked: Run recovers
// the panic on the vCPU's goroutine and returns it, with the stack where it
// was raised.
type PanicError struct {
	// VM and VCPU name the vCPU that panicked: its VM's name and its index.
	VM   string
	VCPU int
	// Value is the value passed to panic.
	Value any
	// Stack is the vCPU goroutine's stack at the panic, as debug.Stack
	// formats it.
	Stack []byte
}

// Error returns the vCPU and the panic's value on its first line, as
// "pvlock: vCPU 0 of vm1 panicked: boom", then a blank line and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("pvlock: vCPU %d of %s panicked: %v\n\n%s", e.VCPU, e.VM, e.Value, bytes.TrimRight(e.Stack, "\n"))
}

// Unwrap returns the panic's value if it is an error, so that errors.Is and
// errors.As see through the panic; nil otherwise.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// RunAll runs several VMs at once on the same host. Off Linux it runs
// nothing and returns an error that wraps errors.ErrUnsupported.
func RunAll(ctx context.Context, fn Workload, vms ...*VM) error {
	return unsupported("RunAll")
}

// VCPU is one virtual CPU: a goroutine locked to an OS thread pinned to
// physical CPUs. Off Linux none runs; its methods may be called from any
// goroutine.
type VCPU struct {
	vm     *VM
	index  int
	cpu    int // home CPU with PinEach, -1 with PinFloat
	tid    atomic.Int64
	waiter *kick.Waiter

	stealStart atomic.Int64 // run_delay when the vCPU started, ns

	exec execState  // running, halted or offline, for cross-vCPU calls (shootdown.go)
	brk  breakState // lock-break bookkeeping (lockbreak.go)
}

// VM returns the vCPU's VM.
func (v *VCPU) VM() *VM { return v.vm }

// Index returns the vCPU's index within its VM.
func (v *VCPU) Index() int { return v.index }

// CPU returns the physical CPU the vCPU is pinned to, or -1 if it floats.
func (v *VCPU) CPU() int { return v.cpu }

// threadID returns the vCPU's OS thread ID while it runs, or 0: always 0
// off Linux.
func (v *VCPU) threadID() int { return int(v.tid.Load()) }

// Waiter returns the vCPU's halt/kick slot. It exists from NewVM on and is
// kept across runs, so its Counters are the vCPU's lifetime counts.
func (v *VCPU) Waiter() *kick.Waiter { return v.waiter }

// Repin moves the running vCPU's thread onto cpus. Off Linux it returns an
// error that wraps errors.ErrUnsupported.
func (v *VCPU) Repin(cpus []int) error {
	return unsupported("Repin")
}

// Steal returns the time the vCPU's thread spent runnable but waiting for a
// CPU during its last run: always 0 off Linux.
func (v *VCPU) Steal() time.Duration { return 0 }
