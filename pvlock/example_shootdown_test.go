package pvlock_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// A shootdown makes every vCPU drop its cached copy of shared state: vCPU 0
// publishes a new epoch and calls; when Call returns, no vCPU runs
// workload code with the old epoch any more.
func ExampleShootdown() {
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	var epoch atomic.Uint64
	cached := make([]uint64, 4) // each vCPU's view, touched only by its own thread
	sd, err := pvlock.NewShootdown(vm, pvlock.ShootdownPV, func(v *pvlock.VCPU) {
		cached[v.Index()] = epoch.Load()
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sd.Close()
	var called atomic.Bool
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 0 {
			epoch.Store(1)
			if _, err := sd.Call(ctx, v, nil); err != nil {
				return err
			}
			called.Store(true)
		}
		for !called.Load() {
			v.Poll() // running vCPUs acknowledge between operations
		}
		if cached[v.Index()] != 1 {
			return fmt.Errorf("vCPU %d still sees epoch %d", v.Index(), cached[v.Index()])
		}
		return nil
	})
	fmt.Println("every vCPU sees epoch 1:", err == nil)
	// Output: every vCPU sees epoch 1: true
}

// A long batch under a lock lets waiting vCPUs in every step instead of
// making them wait for the whole batch.
func ExampleVCPU_CondRelock() {
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	var mu ticket.Lock
	var done atomic.Bool
	pages := make([]bool, 4096)
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 1 { // a vCPU with short operations on the same lock
			for !done.Load() {
				mu.Lock()
				mu.Unlock()
			}
			return nil
		}
		defer done.Store(true)
		mu.Lock()
		for i := range pages {
			pages[i] = true // write-protect a page
			if i%256 == 255 {
				v.CondRelock(&mu) // contended? let the other vCPU in, then go on
			}
		}
		mu.Unlock()
		return nil
	})
	n := 0
	for _, p := range pages {
		if p {
			n++
		}
	}
	fmt.Println(n, "pages protected,", err)
	// Output: 4096 pages protected, <nil>
}
