package pvlock

import "github.com/pvlock/pvlock/kick"

// VM returns the vCPU's VM.
func (v *VCPU) VM() *VM { return v.vm }

// Index returns the vCPU's index within its VM.
func (v *VCPU) Index() int { return v.index }

// CPU returns the physical CPU the vCPU is pinned to, or -1 if it floats.
func (v *VCPU) CPU() int { return v.cpu }

// threadID returns the vCPU's OS thread ID while it runs, or 0 (always 0
// off Linux).
func (v *VCPU) threadID() int { return int(v.tid.Load()) }

// Waiter returns the vCPU's halt/kick slot. It exists from NewVM on and is
// kept across runs, so its Counters are the vCPU's lifetime counts.
func (v *VCPU) Waiter() *kick.Waiter { return v.waiter }
