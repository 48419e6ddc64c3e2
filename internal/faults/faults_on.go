//go:build pvlock_faults

package faults

import (
	"math/rand/v2"
	"time"

	"github.com/pvlock/pvlock/internal/relax"
)

// Enabled reports whether this build injects faults (the pvlock_faults
// build tag).
const Enabled = true

// Inject marks a race window: it counts a hit on p and may delay the
// caller as p's Fault says.
func Inject(p Point) {
	if p >= NumPoints {
		return
	}
	hits[p].Add(1)
	f := faultOf[p].Load()
	r := rand.Uint64() // per-thread generator: no lock, no allocation
	switch {
	case f.SleepOneIn > 0 && uint32(r)%f.SleepOneIn == 0:
		if f.MaxSleep > 0 {
			time.Sleep(time.Duration(r>>32) % f.MaxSleep)
		}
	case f.YieldOneIn > 0 && uint32(r>>8)%f.YieldOneIn == 0:
		// Give the CPU to another runnable thread, as a hypervisor
		// preempting the vCPU inside the window would.
		relax.Yield()
	case f.SpinOneIn > 0 && uint32(r>>16)%f.SpinOneIn == 0:
		if f.MaxSpin > 0 {
			for n := uint32(r>>32) % f.MaxSpin; n > 0; n-- {
				relax.Pause(1)
			}
		}
	}
}
