package pvlock

import (
	"fmt"
	"sync"

	"github.com/pvlock/pvlock/kick"
)

// Halt-polling domains. A vCPU pinned to one CPU (PinEach) polls only while
// no other vCPU homed on that CPU is runnable; vCPUs that float over a CPU
// set (PinFloat) share one domain per set and poll only while fewer of them
// are runnable than the set has CPUs. Domains are shared by every VM on the
// host, so vCPUs of different VMs on one CPU see each other. Threads that
// are not vCPUs (other programs, the Go runtime's own) are not counted: a
// vCPU may poll on a CPU that such a thread wants, for at most one window.
var domains struct {
	mu  sync.Mutex
	cpu map[int]*kick.Domain    // PinEach: one per CPU
	set map[string]*kick.Domain // PinFloat: one per CPU set
}

// domainOf returns the halt-polling domain of vCPU v.
func domainOf(v *VCPU) *kick.Domain {
	domains.mu.Lock()
	defer domains.mu.Unlock()
	if v.cpu >= 0 {
		if domains.cpu == nil {
			domains.cpu = make(map[int]*kick.Domain)
		}
		d := domains.cpu[v.cpu]
		if d == nil {
			d = kick.NewDomain(1)
			domains.cpu[v.cpu] = d
		}
		return d
	}
	key := fmt.Sprint(v.vm.cpus)
	if domains.set == nil {
		domains.set = make(map[string]*kick.Domain)
	}
	d := domains.set[key]
	if d == nil {
		d = kick.NewDomain(len(v.vm.cpus))
		domains.set[key] = d
	}
	return d
}
