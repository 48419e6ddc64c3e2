package pvlock_test

import (
	"fmt"
	"runtime/pprof"
	"time"

	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// Sample every slow-path acquisition, make one goroutine wait for a lock
// for about 20ms, and read the contention profile: a count per millisecond
// waited, at the waiter's stack. A program that imports net/http/pprof
// serves the same profile as /debug/pprof/pvlock.contention, for
// `go tool pprof -top`.
func ExampleSetContentionProfileRate() {
	prev := pvlock.SetContentionProfileRate(1)
	defer pvlock.SetContentionProfileRate(prev)

	var mu ticket.Lock
	mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		mu.Lock() // waits about 20ms: about 20 counts
		mu.Unlock()
	}()
	time.Sleep(20 * time.Millisecond)
	mu.Unlock()
	<-done

	p := pprof.Lookup(pvlock.ContentionProfileName)
	fmt.Println(p.Name(), p.Count() >= 10)
	// Output: pvlock.contention true
}
