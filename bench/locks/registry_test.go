package locks

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/pvlock"
)

func TestRegistry(t *testing.T) {
	lab, tort := Names(), TortureNames()
	for _, name := range []string{"native-ticket", "pv-ticket", "sync.Mutex", "ple-yield", "preemptable-ticket"} {
		k, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if k.Doc == "" || k.New() == nil || !slices.Contains(lab, name) || !slices.Contains(tort, name) {
			t.Fatalf("%s: incomplete registration", name)
		}
	}
	for _, name := range []string{"pv-ticket-short", "pv-qspin-short"} {
		if k, ok := Get(name); !ok || !k.TortureOnly || slices.Contains(lab, name) || !slices.Contains(tort, name) {
			t.Errorf("%s: want a torture-only variant, got %+v", name, k)
		}
		if _, err := Lookup(name); err == nil {
			t.Errorf("the lab accepts the torture-only %s", name)
		}
	}
	if len(lab) != 9 {
		t.Errorf("the lab has %d locks, want the 9 the main job measures: %v", len(lab), lab)
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "pv-ticket") {
		t.Errorf("Lookup(nope) = %v, want an error listing the known locks", err)
	}
	mutex := func() sync.Locker { return new(sync.Mutex) }
	for _, bad := range []func(){
		func() { Register(Kind{Name: "pv-ticket", New: mutex}) },
		func() { Register(Kind{New: mutex}) },
		func() { Register(Kind{Name: "x"}) },
		func() { StatsCounters((*pvlock.LockStats)(lockcore.NewStats("locks-test", "none", []string{"a"}))) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad registration did not panic")
				}
			}()
			bad()
		}()
	}
	if len(Names()) != len(lab) || len(TortureNames()) != len(tort) {
		t.Fatal("a failed registration changed the registry")
	}
}

// TestEveryLockMutualExclusion stresses every registered lock briefly at
// 2x; the peers below get longer runs. The deadline counts from before
// the VM starts, which on a loaded host can take most of a short one.
func TestEveryLockMutualExclusion(t *testing.T) {
	for _, name := range TortureNames() {
		k, _ := Get(name)
		res, err := locktest.Stress(k.New(), locktest.Config{Overcommit: 2, Iterations: 5000,
			Deadline: 400 * time.Millisecond, Work: 20})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Acquisitions == 0 {
			t.Fatalf("%s: no acquisitions", name)
		}
	}
}
