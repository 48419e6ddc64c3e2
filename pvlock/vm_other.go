//go:build !linux

package pvlock

import (
	"context"
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

	exec execState  // running, halted or offline, for cross-vCPU calls (vcpu.go)
	brk  breakState // lock-break bookkeeping (lockbreak.go)
}

// SiblingSpin returns the vCPU's current sibling spin window: how many
// spins its PV lock waiters spend while another vCPU homed on its CPU
// waits for the CPU (the pvlock_vcpu_sibling_spin_polls gauge). Off Linux
// no vCPU runs: always 0.
func (v *VCPU) SiblingSpin() uint32 { return 0 }

// Repin moves the running vCPU's thread onto cpus. Off Linux it returns an
// error that wraps errors.ErrUnsupported.
func (v *VCPU) Repin(cpus []int) error {
	return unsupported("Repin")
}

// Steal returns the time the vCPU's thread spent runnable but waiting for a
// CPU during its last run: always 0 off Linux.
func (v *VCPU) Steal() time.Duration { return 0 }
