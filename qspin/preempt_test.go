package qspin

import (
	"context"
	"math"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// preemptChildEnv names the spin loop a child process of
// TestSpinLoopsPreemptible runs.
const preemptChildEnv = "QSPIN_PREEMPT_CHILD"

// spinLoops are the slow path's waits that may spin for long, each set up
// to spin until release is called.
var spinLoops = map[string]func() (spin, release func()){
	// claim: the queue head waits for its successor to link itself.
	"claim-next": func() (func(), func()) {
		l, n := New(), &qnode{}
		other := encodeTail(5)
		return func() { l.claim(n, encodeTail(4), other|lockedVal, true) },
			func() { n.next.Store(&qnode{}) }
	},
	// steal: a queue whose head is not spinning, a held lock.
	"steal": func() (func(), func()) {
		l := New(SpinThreshold(math.MaxUint32))
		l.word.Store(encodeTail(4) | lockedVal)
		return func() { l.steal() },
			func() { l.word.Store(encodeTail(4) | pendingVal | lockedVal) }
	},
}

// TestSpinLoopsPreemptible checks that every long spin loop of the slow
// path contains a synchronous preemption point (a Go call), not only
// relax.Pause, which is assembly and cannot be preempted asynchronously.
// Each loop runs in a child process with GOMAXPROCS=1 and asynchronous
// preemption off, so a loop without such a point never gives up the only
// P: the child's GC (a stop-the-world) and its main goroutine then never
// run again, and the child hangs until the deadline. With the point, the
// scheduler preempts the loop within sysmon's 10 ms.
func TestSpinLoopsPreemptible(t *testing.T) {
	if name := os.Getenv(preemptChildEnv); name != "" {
		preemptChild(t, name)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name := range spinLoops {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestSpinLoopsPreemptible$", "-test.count=1")
			cmd.Env = append(os.Environ(), preemptChildEnv+"="+name,
				"GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("the %s loop was never preempted: the child hung for 20s (GOMAXPROCS=1, no async preemption)\n%s", name, out)
			}
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
		})
	}
}

func preemptChild(t *testing.T, name string) {
	if runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("child runs with GOMAXPROCS=%d, want 1", runtime.GOMAXPROCS(0))
	}
	spin, release := spinLoops[name]()
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		spin()
	}()
	<-started
	// The spinner has the only P now. Sleeping needs the P back to wake
	// up, and a GC needs every goroutine stopped.
	time.Sleep(time.Millisecond)
	runtime.GC()
	release()
	<-done
}
