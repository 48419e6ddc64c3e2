package pvlock

import (
	"bytes"
	"errors"
	"fmt"
)

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
