package locks

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/lockstat"
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
		func() { StatsCounters(lockstat.New("locks-test", "none", []string{"a"})) },
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

// TestRWKinds checks the reader-writer kinds: registered as RW Variants
// (out of the default list, in the lab's and the torture's), with a read
// side that readers share, and ReadSide's fallback for the other locks.
func TestRWKinds(t *testing.T) {
	lab, all, tort := Names(), AllNames(), TortureNames()
	for _, name := range []string{"sync.RWMutex", "native-rwlock", "pv-rwlock"} {
		k, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !k.RW || !k.Variant || k.Doc == "" || slices.Contains(lab, name) || !slices.Contains(all, name) || !slices.Contains(tort, name) {
			t.Errorf("%s: want an RW variant the lab and the torture run, got %+v", name, k)
		}
		rw, ok := k.New().(RWLocker)
		if !ok {
			t.Fatalf("%s: New returns no RWLocker", name)
		}
		// Two readers hold it at once: a second RLock returns while the
		// first is held (it would block on an exclusive lock).
		rw.RLock()
		done := make(chan struct{})
		go func() {
			rw.RLock()
			rw.RUnlock()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a second reader did not get in beside the first", name)
		}
		rw.RUnlock()
		if ReadSide(rw) != rw {
			t.Errorf("%s: ReadSide does not return the lock's own read side", name)
		}
	}
	if k, _ := Get("pv-rwlock"); k.Stats == nil || k.Passive == nil {
		t.Error("pv-rwlock: no halt statistics")
	}
	if k, ok := Get("pv-rwlock-short"); !ok || !k.TortureOnly || !k.RW || !slices.Contains(tort, "pv-rwlock-short") {
		t.Errorf("pv-rwlock-short: want a torture-only RW variant, got %+v", k)
	}

	// A lock without a read side is taken exclusively by readers.
	var mu sync.Mutex
	rs := ReadSide(&mu)
	rs.RLock()
	if mu.TryLock() {
		t.Fatal("ReadSide(sync.Mutex).RLock did not lock the mutex")
	}
	rs.RUnlock()
	if !mu.TryLock() {
		t.Fatal("ReadSide(sync.Mutex).RUnlock did not unlock the mutex")
	}
	mu.Unlock()
	// Through a wrapper that exposes its lock as Inner.
	var rwm sync.RWMutex
	if got := ReadSide(wrapper{&rwm}); got != RWLocker(&rwm) {
		t.Errorf("ReadSide of a wrapper: %T, want the wrapped RWMutex", got)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("an RW registration of a lock without a read side did not panic")
			}
		}()
		Register(Kind{Name: "test-not-rw", RW: true, New: func() sync.Locker { return new(sync.Mutex) }})
	}()
	if _, ok := Get("test-not-rw"); ok {
		t.Error("the refused RW registration was registered")
	}
}

// wrapper is a lock wrapper that exposes the lock it wraps, as the lab's
// probe does.
type wrapper struct{ sync.Locker }

func (w wrapper) Inner() sync.Locker { return w.Locker }
