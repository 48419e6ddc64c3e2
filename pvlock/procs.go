package pvlock

import (
	"runtime"
	"sync"
)

// procs tracks how many vCPU threads are running across all VMs and keeps
// GOMAXPROCS large enough for all of them (see the package doc).
var procs struct {
	mu       sync.Mutex
	running  int // vCPUs of running VMs
	saved    int // GOMAXPROCS before the first VM started; 0 when none runs
	raisedTo int
}

// procSlack is the number of Ps kept beyond the vCPU count for the
// goroutines that start, observe and stop VMs.
const procSlack = 2

func reserveProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	cur := runtime.GOMAXPROCS(0)
	if procs.running == 0 {
		procs.saved = cur
	}
	procs.running += n
	if want := procs.running + procSlack; want > cur {
		runtime.GOMAXPROCS(want)
		procs.raisedTo = want
	}
}

func releaseProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.running -= n
	if procs.running == 0 && procs.saved > 0 {
		if runtime.GOMAXPROCS(0) == procs.raisedTo {
			runtime.GOMAXPROCS(procs.saved)
		}
		procs.saved, procs.raisedTo = 0, 0
	}
}
