package kick_test

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pvlock/pvlock/kick"
)

// A waiter halts until its condition holds; the kicker makes it hold and
// kicks exactly that waiter through a Table. The kick token is sticky, so
// the order of the two sides does not matter: a kick that comes before
// the halt is not lost.
func Example() {
	var (
		table kick.Table
		ready atomic.Bool
		word  uint32 // what the waiter waits for; its address is the key
	)
	key := uintptr(unsafe.Pointer(&word))

	w := kick.Get() // an ordinary goroutine: a pooled waiter that parks
	defer kick.Put(w)
	w.Arm() // before publishing: no old token survives
	table.Publish(w, key, 1)

	done := make(chan bool)
	go func() {
		ready.Store(true)
		found, _ := table.Kick(key, 1)
		done <- found
	}()

	if !ready.Load() { // re-check after publishing, then halt
		w.Halt(10 * time.Second) // returns at once if the kick came first
	}
	table.Withdraw(w)
	fmt.Println("kicker found the waiter:", <-done)
	fmt.Println("ready:", ready.Load(), "backend:", w.Backend())
	// Output:
	// kicker found the waiter: true
	// ready: true backend: park
}

// A kick delivered before the halt leaves a token, and the halt returns
// at once; a halt without a kick times out.
func ExampleWaiter_Halt() {
	w := kick.NewWaiter(kick.Park)
	w.Arm()
	fmt.Println("first kick delivers a token:", w.Kick())
	fmt.Println("second kick finds one pending:", w.Kick())
	fmt.Println(w.Halt(time.Second))
	w.Arm()
	fmt.Println(w.Halt(time.Millisecond))
	// Output:
	// first kick delivers a token: true
	// second kick finds one pending: false
	// kicked
	// timed out
}
