//go:build linux

package bench

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/internal/affinity"
	"golang.org/x/sys/unix"
)

// Start starts the load on its own OS thread and returns once that thread
// runs pinned and real-time, or with an error if it cannot (EPERM: no
// CAP_SYS_NICE). stop ends the load and returns once its thread runs no
// more and has dropped its real-time policy; call it once.
func (h HostLoad) Start() (stop func(), err error) {
	if err := h.Check(); err != nil {
		return nil, err
	}
	var quit atomic.Bool
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread ends with the goroutine (no UnlockOSThread): it
		// carries a real-time policy and a one-CPU affinity that no other
		// goroutine may inherit.
		runtime.LockOSThread()
		if err := affinity.Pin([]int{h.CPU}); err != nil {
			started <- fmt.Errorf("host load: pin to CPU %d: %w", h.CPU, err)
			return
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: a real-time thread needs CAP_SYS_NICE (root)", err)
			}
			started <- fmt.Errorf("host load: SCHED_FIFO: %w", err)
			return
		}
		started <- nil
		busy, idle := h.busy(), h.period()-h.busy()
		sleep := unix.NsecToTimespec(int64(idle))
		for !quit.Load() {
			for end := time.Now().Add(busy); time.Now().Before(end); {
			}
			// A plain system call, not time.Sleep: the thread itself
			// leaves the CPU, with no timer on another thread to wake it.
			unix.Nanosleep(&sleep, nil)
		}
		// Back to an ordinary thread before stop returns: the thread
		// itself ends with this goroutine, a moment later.
		unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0)
	}()
	if err := <-started; err != nil {
		<-done
		return nil, err
	}
	return func() {
		quit.Store(true)
		<-done
	}, nil
}
