package qspin_test

import (
	"fmt"
	"sync"

	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/qspin"
)

// The zero Lock is a PV queued spinlock, ready to use.
func ExampleLock() {
	var (
		mu    qspin.Lock
		count int
		wg    sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				mu.Lock()
				count++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Println(count)
	// Output: 8000
}

// New selects a variant; TryLock never waits.
func ExampleNew() {
	native := qspin.New(qspin.Native())
	tas := qspin.NewTAS()
	fmt.Println(native.Mode(), tas.Mode())

	native.Lock()
	fmt.Println(native.TryLock(), native.IsLocked())
	native.Unlock()
	fmt.Println(native.TryLock())
	native.Unlock()
	// Output:
	// native tas
	// false true
	// true
}

// A named lock counts apart from the others: its statistics, and its
// series in the Prometheus metrics (name="orders"), are its name's.
func ExampleName() {
	orders := qspin.New(qspin.Name("orders"))
	for range 2048 {
		orders.Lock()
		orders.Unlock()
	}
	for _, s := range lockstat.All() {
		if s.Kind() == "qspin" && s.Mode() == "pv" && s.Name() == "orders" {
			fmt.Println(s.Name(), s.Snapshot().Events[qspin.Acquisitions])
		}
	}
	// Output: orders 2048
}
