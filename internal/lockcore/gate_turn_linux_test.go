//go:build linux && !pvlock_portable

package lockcore

import (
	"errors"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
)

// On a deep queue, a vCPU that has run turnCPU of CPU time since its last
// passive wait goes outside at its next slow path even with room in the
// active set, behind the waiters already there, and leaves C alone; one
// whose turn has just begun, one on a queue that is not deep, one with no
// passive wait behind it, and a goroutine enter as before.
func TestGateTurnSendsAVCPUOutside(t *testing.T) {
	defer func(d int64, p uint32) { FairBound, deepPassive = d, p }(FairBound, deepPassive)
	FairBound, deepPassive = int64(time.Hour), 2

	deep, shallow := 2*passiveOne, passiveOne
	if turnOver(deep, nil, goroutineActive) {
		t.Fatal("a goroutine's turn is bounded")
	}

	var l gateLock
	before := gateEvents()
	l.Lock()
	// Two passive waiters, tickets 0 and 1, stand for a deep queue.
	l.gate.state.Store(deep)
	l.gate.tail.Store(2)

	d := kick.NewDomain(1)
	d.Enter() // a runnable sibling: the vCPU halts rather than watch
	defer d.Leave()
	got, checked := make(chan struct{}), make(chan error, 1)
	go func() {
		defer fakeVCPU(t, MaxVCPUs-5, d)()
		w := kick.Current()
		v := Of(w)
		for _, c := range []struct {
			start int64
			s     uint32
			want  bool
			what  string
		}{
			{0, deep, false, "no passive wait behind it"},
			{threadCPU(), deep, false, "a turn just begun"},
			{threadCPU() - turnCPU, shallow, false, "a queue that is not deep"},
			{threadCPU() - turnCPU, deep, true, "a turn that is over"},
		} {
			v.turn.Store(c.start)
			if turnOver(c.s, w, vcpuActive) != c.want {
				checked <- errors.New("turnOver is wrong for " + c.what)
				return
			}
		}
		checked <- nil
		l.Lock() // its turn is over: outside, though the active set is empty
		close(got)
		l.Unlock()
	}()
	if err := testkit.Receive(t, checked, 30*time.Second, "the vCPU's checks"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the vCPU to go outside", func() bool { return l.gate.Passive() == 3 })
	if s := l.gate.state.Load(); s != 3*passiveOne {
		t.Fatalf("state %#x after the vCPU counted itself, want three passive, none active, no C", s)
	}
	if n := gateEvents()[PassiveCulls] - before[PassiveCulls]; n != 1 {
		t.Fatalf("%s: %d, want 1", PassiveCulls, n)
	}
	testkit.WaitFor(t, "its passive ticket", func() bool { return l.gate.tail.Load() == 3 })

	// Tickets 0 and 1 are admitted first, each by a drained release, and
	// come in; the lock is ours meanwhile.
	for k := uint32(1); k <= 2; k++ {
		l.gate.Released(1, gateTestStats, &gateTestEvents)
		if h := l.gate.head.Load(); h != k {
			t.Fatalf("head %d after admission %d", h, k)
		}
		select {
		case <-got:
			t.Fatal("the vCPU went ahead of the waiters before it")
		default:
		}
		l.gate.state.Add(^(wokenBit - 2))
		l.gate.Leave()
	}
	l.Unlock() // drained: admits the vCPU
	testkit.Receive(t, got, 30*time.Second, "the vCPU was not admitted")
	testkit.WaitFor(t, "the gate to empty", func() bool { return l.gate.state.Load() == 0 })
}
