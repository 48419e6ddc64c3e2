package kick

import (
	"sync/atomic"
	"testing"
	"time"
)

// recordHook counts its calls and checks that they pair up and that the
// waiter is in the sleeping state while the hook says it halted.
type recordHook struct {
	w                 *Waiter
	halting, resumed  int
	stateWhileHalting uint32
}

func (h *recordHook) Halting() {
	h.halting++
	h.stateWhileHalting = atomic.LoadUint32(&h.w.state)
}

func (h *recordHook) Resumed() { h.resumed++ }

func TestHaltHook(t *testing.T) {
	backends(t, func(t *testing.T, w *Waiter) {
		h := &recordHook{w: w}
		w.Hook = h

		// An early token: Halt does not sleep, so the hook is not told.
		w.Arm()
		w.Kick()
		if r := w.Halt(0); r != Kicked || h.halting != 0 || h.resumed != 0 {
			t.Fatalf("early kick: Halt=%v, hook calls %d/%d, want none", r, h.halting, h.resumed)
		}

		// A real sleep that times out: one pair, state sleeping inside.
		w.Arm()
		if r := w.Halt(time.Millisecond); r != TimedOut {
			t.Fatalf("Halt = %v, want timed out", r)
		}
		if h.halting != 1 || h.resumed != 1 || h.stateWhileHalting != stateSleeping {
			t.Fatalf("timeout: hook calls %d/%d, state in Halting %d", h.halting, h.resumed, h.stateWhileHalting)
		}

		// A real sleep ended by a kick: a second pair.
		w.Arm()
		go func() {
			for atomic.LoadUint32(&w.state) != stateSleeping {
				time.Sleep(50 * time.Microsecond)
			}
			w.Kick()
		}()
		if r := w.Halt(10 * time.Second); r != Kicked {
			t.Fatalf("Halt = %v, want kicked", r)
		}
		if h.halting != 2 || h.resumed != 2 {
			t.Fatalf("kicked sleep: hook calls %d/%d, want 2/2", h.halting, h.resumed)
		}
	})
}
