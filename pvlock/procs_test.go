package pvlock

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// procsCalls replaces the runtime calls of the GOMAXPROCS restore with
// ones that record what they were asked ("set N" or "default") and then
// make the real call; the test's cleanup puts the real calls back and
// GOMAXPROCS as it was. It sets procsFromEnv to fromEnv and GOMAXPROCS to
// the runtime's default, which the recorded calls do not include.
func procsCalls(t *testing.T, fromEnv bool) *[]string {
	t.Helper()
	procs.mu.Lock()
	running := procs.running
	procs.mu.Unlock()
	if running != 0 {
		t.Skipf("%d vCPUs of other VMs are running", running)
	}
	orig := runtime.GOMAXPROCS(0)
	wasDefault := isDefaultProcs(orig)
	var calls []string
	setProcs = func(n int) int {
		calls = append(calls, fmt.Sprint("set ", n))
		return runtime.GOMAXPROCS(n)
	}
	setDefaultProcs = func() {
		calls = append(calls, "default")
		runtime.SetDefaultGOMAXPROCS()
	}
	env := procsFromEnv
	t.Cleanup(func() {
		setProcs, setDefaultProcs, procsFromEnv = runtime.GOMAXPROCS, runtime.SetDefaultGOMAXPROCS, env
		if wasDefault {
			runtime.SetDefaultGOMAXPROCS()
		} else {
			runtime.GOMAXPROCS(orig)
		}
	})
	procsFromEnv = fromEnv
	runtime.SetDefaultGOMAXPROCS()
	return &calls
}

// raiseAndRestore reserves enough vCPUs to raise GOMAXPROCS, checks it
// was raised, releases them and returns GOMAXPROCS afterwards.
func raiseAndRestore(t *testing.T) int {
	t.Helper()
	n := runtime.GOMAXPROCS(0) + 3
	reserveProcs(n)
	if got, want := runtime.GOMAXPROCS(0), n+procSlack; got != want {
		releaseProcs(n)
		t.Fatalf("GOMAXPROCS %d while %d vCPUs run, want %d", got, n, want)
	}
	releaseProcs(n)
	return runtime.GOMAXPROCS(0)
}

// TestProcsRestoreDefault: GOMAXPROCS that was the runtime's default is
// restored with runtime.SetDefaultGOMAXPROCS, so that the runtime goes on
// following the CPU limits, and not fixed at its old value.
func TestProcsRestoreDefault(t *testing.T) {
	calls := procsCalls(t, false)
	def := runtime.GOMAXPROCS(0)
	if got := raiseAndRestore(t); got != def {
		t.Errorf("GOMAXPROCS %d after the vCPUs stopped, want the default %d", got, def)
	}
	if len(*calls) == 0 || (*calls)[len(*calls)-1] != "default" {
		t.Errorf("the restore made the calls %q; want it to end with runtime.SetDefaultGOMAXPROCS", *calls)
	}
	if slices.Contains(*calls, fmt.Sprint("set ", def)) {
		t.Errorf("the restore set GOMAXPROCS to %d explicitly (%q), which stops the runtime's updates", def, *calls)
	}
}

// TestProcsRestoreExplicit: GOMAXPROCS that the program set is restored
// to that value, explicitly.
func TestProcsRestoreExplicit(t *testing.T) {
	calls := procsCalls(t, false)
	set := runtime.GOMAXPROCS(0) + 1 // not the default
	runtime.GOMAXPROCS(set)
	if got := raiseAndRestore(t); got != set {
		t.Errorf("GOMAXPROCS %d after the vCPUs stopped, want the %d the program set", got, set)
	}
	if last := (*calls)[len(*calls)-1]; last != fmt.Sprint("set ", set) {
		t.Errorf("the restore made the calls %q; want it to end with GOMAXPROCS(%d)", *calls, set)
	}
}

// TestProcsRestoreFromEnv: GOMAXPROCS fixed by the environment variable is
// not the runtime's default (which ignores the variable), even when the
// two are equal: it is restored explicitly, and never reset to the
// default.
func TestProcsRestoreFromEnv(t *testing.T) {
	calls := procsCalls(t, true)
	cur := runtime.GOMAXPROCS(0)
	if got := raiseAndRestore(t); got != cur {
		t.Errorf("GOMAXPROCS %d after the vCPUs stopped, want %d", got, cur)
	}
	if slices.Contains(*calls, "default") {
		t.Errorf("the restore made the calls %q; with GOMAXPROCS from the environment it must not set the default", *calls)
	}
	if last := (*calls)[len(*calls)-1]; last != fmt.Sprint("set ", cur) {
		t.Errorf("the restore made the calls %q; want it to end with GOMAXPROCS(%d)", *calls, cur)
	}
}
