package pvlock

import "github.com/pvlock/pvlock/internal/lockcore"

// The declarations of a VM's configuration, the same on every platform
// (vm.go runs VMs on Linux; vm_other.go refuses to elsewhere).

// MaxVCPUs is the largest number of vCPUs that may exist at once across all
// VMs. Every vCPU is an OS thread, and the Go runtime stops the process at
// 10000 threads by default; the queued lock's tail also encodes the vCPU
// in a bounded field. Ticket locks allow 2^31-1 concurrent waiters, far
// beyond this. It is 4096.
const MaxVCPUs = lockcore.MaxVCPUs

// Pinning says how vCPU threads are placed on the physical CPUs: PinEach
// or PinFloat.
type Pinning int

// String returns the policy's name, as pvbench's -pin flag spells it.
func (p Pinning) String() string {
	return lockcore.Label([]string{PinEach: "each", PinFloat: "float"}, p, "Pinning")
}

// The pinning policies.
const (
	// PinEach pins vCPU i to CPUs[i % len(CPUs)], round-robin, like a
	// hypervisor that gives each vCPU a home CPU.
	PinEach Pinning = iota
	// PinFloat lets every vCPU run on any of CPUs, so the Linux scheduler
	// also balances vCPUs between CPUs.
	PinFloat
)

// Config describes a VM.
type Config struct {
	// Name labels the VM in statistics and errors; default "vm<N>".
	Name string
	// VCPUs is the number of vCPUs, 1..MaxVCPUs.
	VCPUs int
	// CPUs are the physical CPUs the vCPUs run on; nil means every CPU
	// the process may use (HostCPUs).
	CPUs []int
	// Pinning places vCPUs on CPUs; the default is PinEach.
	Pinning Pinning
	// FirstCPU shifts PinEach's round-robin: vCPU i goes to
	// CPUs[(FirstCPU+i) % len(CPUs)]. VMs sharing a host continue one
	// round-robin this way instead of all starting on the first CPU.
	FirstCPU int
}
