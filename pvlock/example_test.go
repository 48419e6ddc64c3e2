package pvlock_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/pvlock/pvlock/pvlock"
)

func ExampleOvercommit() {
	cfg, err := pvlock.Overcommit(3, []int{0})
	fmt.Println(cfg.VCPUs, err)
	// Output: 3 <nil>
}

func ExampleVM_Run() {
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 4, Name: "demo"})
	if err != nil {
		panic(err)
	}
	var ran atomic.Int32
	err = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
		ran.Add(1) // runs on v's own pinned OS thread
		return nil
	})
	fmt.Println(vm.Name(), ran.Load(), err)
	// Output: demo 4 <nil>
}
