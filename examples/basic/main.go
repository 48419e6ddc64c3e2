// Command basic shows pvlock's locks used like sync.Mutex from ordinary
// goroutines: a PV ticket lock and a PV queued lock guarding a map.
//
//	go run ./examples/basic
package main

import (
	"fmt"
	"sync"

	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// inventory is a map guarded by any sync.Locker.
type inventory struct {
	mu    sync.Locker
	items map[string]int
}

func (inv *inventory) add(name string, n int) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.items[name] += n
}

func fill(mu sync.Locker) map[string]int {
	inv := &inventory{mu: mu, items: map[string]int{}}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				inv.add(fmt.Sprintf("item-%d", i%4), 1)
			}
		}()
	}
	wg.Wait()
	return inv.items
}

func main() {
	var t ticket.Lock // zero value: an unlocked PV ticket lock
	var q qspin.Lock  // zero value: an unlocked PV queued lock
	fmt.Println("ticket:", fill(&t))
	fmt.Println("qspin: ", fill(&q))
	if t.TryLock() {
		fmt.Println("TryLock on a free lock succeeds; IsContended:", t.IsContended())
		t.Unlock()
	}
}
