package pvlock

import (
	"fmt"
	"testing"
)

// TestShootdownInterleavings runs every interleaving of one initiator's
// steps (post the request; look at the target once) with one target's
// steps (halt; resume; run workload code), using the real functions on a
// vCPU that is marked running by hand. In each order, whenever the
// initiator is done with the target (acknowledged, or skipped as halted),
// the target must have run the handler before its workload step.
func TestShootdownInterleavings(t *testing.T) {
	const (
		post = iota
		look
		halting
		resumed
		workload
	)
	names := []string{"post", "look", "halting", "resumed", "workload"}
	initiator := []int{post, look}
	target := []int{halting, resumed, workload}
	var orders [][]int
	var gen func(order []int, i, j int)
	gen = func(order []int, i, j int) {
		if i == len(initiator) && j == len(target) {
			orders = append(orders, append([]int(nil), order...))
			return
		}
		if i < len(initiator) {
			gen(append(order, initiator[i]), i+1, j)
		}
		if j < len(target) {
			gen(append(order, target[j]), i, j+1)
		}
	}
	gen(nil, 0, 0)
	if len(orders) != 10 {
		t.Fatalf("%d interleavings, want 10", len(orders))
	}
	for _, mode := range []ShootdownMode{ShootdownPV, ShootdownNative} {
		for _, order := range orders {
			var trace []string
			for _, s := range order {
				trace = append(trace, names[s])
			}
			if err := runInterleaving(mode, order); err != nil {
				t.Errorf("%s %v: %v", mode, trace, err)
			}
		}
	}
}

func runInterleaving(mode ShootdownMode, order []int) error {
	vm, err := NewVM(Config{VCPUs: 1})
	if err != nil {
		return err
	}
	v := vm.vcpus[0]
	runs := 0
	s, err := NewShootdown(vm, mode, func(*VCPU) { runs++ })
	if err != nil {
		return err
	}
	defer s.Close()
	v.exec.word.Or(exOnline) // in its workload, as enter() would leave it
	hook := (*haltHook)(v)
	const g = 1
	s.gen.Store(g)
	var st CallStats
	wait := []waitee{{v: v}}
	released := false // the initiator no longer waits for the target
	for _, step := range order {
		switch step {
		case 0: // post
			s.post(v, g)
		case 1: // look
			wait = s.sweep(wait, g, &st)
			released = len(wait) == 0
		case 2:
			hook.Halting()
		case 3:
			hook.Resumed()
		case 4:
			if released && runs == 0 {
				return fmt.Errorf("workload code ran without the handler after the initiator let go (%+v)", st)
			}
		}
	}
	// An initiator still waiting keeps looking; the running target polls.
	v.Poll()
	if wait = s.sweep(wait, g, &st); len(wait) != 0 {
		return fmt.Errorf("target polled but the initiator still waits (%+v)", st)
	}
	if runs == 0 {
		return fmt.Errorf("handler never ran (%+v)", st)
	}
	if mode == ShootdownNative && st.Deferred != 0 {
		return fmt.Errorf("native call deferred: %+v", st)
	}
	return nil
}
