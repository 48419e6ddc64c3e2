package ticket_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

func ExampleLock() {
	var mu ticket.Lock // zero value: unlocked, PV
	var wg sync.WaitGroup
	total := 0
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			mu.Lock()
			total += i
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println(total)
	// Output: 10
}

// A PV ticket lock shared by vCPUs overcommitted 2x on the host's CPUs.
func ExampleLock_overcommitted() {
	cfg, err := pvlock.Overcommit(2, nil)
	if err != nil {
		panic(err)
	}
	vm, err := pvlock.NewVM(cfg)
	if err != nil {
		panic(err)
	}
	mu := ticket.New(ticket.SpinThreshold(256))
	counter := 0
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		for i := 0; i < 1000; i++ {
			mu.Lock()
			counter++
			mu.Unlock()
		}
		return nil
	})
	fmt.Println(err, counter == 1000*len(vm.VCPUs()))
	// Output: <nil> true
}

func ExampleNew() {
	native := ticket.New(ticket.Native())
	native.Lock()
	fmt.Println(native.PV(), native.TryLock())
	native.Unlock()
	// Output: false false
}
