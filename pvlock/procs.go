package pvlock

import (
	"os"
	"runtime"
	"strconv"
	"sync"
)

// procs tracks how many vCPU threads are running across all VMs and keeps
// GOMAXPROCS large enough for all of them (see the package doc).
var procs struct {
	mu       sync.Mutex
	running  int // vCPUs of running VMs
	saved    int // GOMAXPROCS before the first VM started; 0 when none runs
	raisedTo int
	// wasDefault records, at the first raise, that saved was the
	// runtime's default, which the runtime keeps updating as the CPU
	// limits change: the restore then asks for the default again rather
	// than fixing the old value, which would stop those updates.
	wasDefault bool
}

// The runtime calls the restore makes, replaceable by tests.
var (
	setProcs        = runtime.GOMAXPROCS
	setDefaultProcs = runtime.SetDefaultGOMAXPROCS
)

// procsFromEnv reports whether the GOMAXPROCS environment variable fixed
// GOMAXPROCS at startup (a positive number, as the runtime reads it): the
// runtime then never updates it, and its value is not the default that
// runtime.SetDefaultGOMAXPROCS sets.
var procsFromEnv = func() bool {
	n, err := strconv.Atoi(os.Getenv("GOMAXPROCS"))
	return err == nil && n > 0
}()

// isDefaultProcs reports whether cur, the current GOMAXPROCS, is the
// runtime's default. The runtime does not say whether GOMAXPROCS was set,
// so this sets the default and compares, and puts cur back if it differs;
// a program that set GOMAXPROCS to the very value of the default is taken
// to use the default. It is called only just before GOMAXPROCS is raised.
func isDefaultProcs(cur int) bool {
	if procsFromEnv {
		return false
	}
	setDefaultProcs()
	if runtime.GOMAXPROCS(0) == cur {
		return true
	}
	setProcs(cur)
	return false
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
		if procs.raisedTo == 0 {
			procs.wasDefault = cur == procs.saved && isDefaultProcs(cur)
		}
		setProcs(want)
		procs.raisedTo = want
	}
}

func releaseProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.running -= n
	if procs.running == 0 && procs.saved > 0 {
		if runtime.GOMAXPROCS(0) == procs.raisedTo {
			// Since Go 1.25 setting GOMAXPROCS stops the runtime's
			// updates of its default (to the cgroup CPU limit): a
			// default is restored as the default, so that they resume.
			if procs.wasDefault {
				setDefaultProcs()
			} else {
				setProcs(procs.saved)
			}
		}
		procs.saved, procs.raisedTo, procs.wasDefault = 0, 0, false
	}
}
