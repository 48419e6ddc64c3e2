//go:build linux

package pvlock

import (
	"unsafe"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// vcpuOf returns the VCPU whose lock-facing part lv is: every
// lockcore.VCPU a waiter can find is the locks field of a VCPU (NewVM
// initialises it, and nothing else does).
func vcpuOf(lv *lockcore.VCPU) *VCPU {
	if lv == nil {
		return nil
	}
	return (*VCPU)(unsafe.Add(unsafe.Pointer(lv), -int(unsafe.Offsetof(VCPU{}.locks))))
}
