//go:build !linux

package pvlock

import "github.com/pvlock/pvlock/internal/lockcore"

// vcpuOf returns nil: off Linux there are no vCPUs, so no lock waiter
// runs on one.
func vcpuOf(*lockcore.VCPU) *VCPU { return nil }
