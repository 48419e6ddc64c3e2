package qspin_test

import (
	"fmt"
	"sync"

	"github.com/pvlock/pvlock/qspin"
)

// The zero RWLock is a PV queued reader-writer lock, ready to use: many
// readers at once, or one writer.
func ExampleRWLock() {
	var (
		mu     qspin.RWLock
		prices = map[string]int{"tea": 3}
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for range 100 {
				mu.RLock()
				_ = prices["tea"]
				mu.RUnlock()
			}
		})
	}
	mu.Lock()
	prices["coffee"] = 4
	mu.Unlock()
	wg.Wait()

	mu.RLock()
	fmt.Println(len(prices), prices["coffee"])
	mu.RUnlock()
	// Output: 2 4
}

// NewRW takes the options of New; RLocker adapts the read side to
// sync.Locker.
func ExampleNewRW() {
	l := qspin.NewRW(qspin.Native())
	fmt.Println(l.Mode())

	var r sync.Locker = l.RLocker()
	r.Lock()
	fmt.Println(l.TryRLock(), l.TryLock())
	l.RUnlock()
	r.Unlock()
	fmt.Println(l.TryLock())
	l.Unlock()
	// Output:
	// native
	// true false
	// true
}
