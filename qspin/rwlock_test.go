package qspin

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/testkit"
)

// forEachRW runs f as a subtest on a fresh lock of every variant.
func forEachRW(t *testing.T, f func(t *testing.T, l *RWLock)) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			l := NewRW(v.opts...)
			if l.Mode() != v.mode {
				t.Fatalf("NewRW: mode %v, want %v", l.Mode(), v.mode)
			}
			f(t, l)
		})
	}
}

// rwDump describes the lock for a hung test's watchdog.
func rwDump(l *RWLock) func() string {
	return func() string {
		v := l.word.Load()
		return fmt.Sprintf("rwlock word %#x: locked %#x waiting %v readers %d halted %v; wait lock word %#x",
			v, v&rwLocked, v&rwWaiting != 0, v&rwReaders>>rwShift, v&rwHalted != 0, l.wait.word.Load())
	}
}

func TestRWZeroValueIsUnlockedPV(t *testing.T) {
	var l RWLock
	if l.Mode() != ModePV || !l.PV() {
		t.Fatalf("zero RWLock: mode %v, PV() %v; want pv, true", l.Mode(), l.PV())
	}
	if l.IsLocked() || l.Readers() != 0 {
		t.Fatal("zero RWLock is held")
	}
	l.RLock()
	l.RLock()
	if l.Readers() != 2 || l.IsLocked() {
		t.Fatalf("two read locks: readers %d, write-locked %v", l.Readers(), l.IsLocked())
	}
	l.RUnlock()
	l.RUnlock()
	l.Lock()
	if !l.IsLocked() || l.Readers() != 0 {
		t.Fatal("write lock not seen")
	}
	l.Unlock()
	if l.word.Load() != 0 {
		t.Fatalf("word %#x after all unlocks, want 0", l.word.Load())
	}
}

// TestRWWordLayout pins the count word to the kernel's layout.
func TestRWWordLayout(t *testing.T) {
	if rwLocked != 0xff || rwWaiting != 0x100 || rwBias != 0x200 || rwWMask != 0x1ff {
		t.Fatalf("layout: locked %#x waiting %#x bias %#x wmask %#x", rwLocked, rwWaiting, rwBias, rwWMask)
	}
	if rwReaders&(rwWMask|rwHalted) != 0 || rwReaders|rwWMask|rwHalted != 1<<32-1 {
		t.Fatalf("fields overlap or leave gaps: readers %#x", rwReaders)
	}
	if rwMaxReaders != 1<<22-2 {
		t.Fatalf("rwMaxReaders = %d", rwMaxReaders)
	}
}

func TestRWOptions(t *testing.T) {
	for _, v := range variants() {
		l := NewRW(v.opts...)
		if l.Mode() != v.mode || l.wait.Mode() != v.mode {
			t.Errorf("%s: mode %v, wait lock %v", v.name, l.Mode(), l.wait.Mode())
		}
		if pv := v.mode == ModePV || v.mode == ModePVNoSteal; l.PV() != pv {
			t.Errorf("%s: PV() = %v", v.name, l.PV())
		}
	}
	if l := NewRW(SpinThreshold(7)); l.wait.spin.Threshold() != 7 {
		t.Errorf("SpinThreshold(7): threshold %d", l.wait.spin.Threshold())
	}
}

// TestRWTry is the first part of Go's TestRWMutex.
func TestRWTry(t *testing.T) {
	forEachRW(t, func(t *testing.T, m *RWLock) {
		// try fails the test unless the attempt what, made with the lock
		// in state, got want.
		try := func(what string, got, want bool, state string) {
			t.Helper()
			if got != want {
				t.Fatalf("%s %s with the lock %s", what, map[bool]string{true: "succeeded", false: "failed"}[got], state)
			}
		}
		m.Lock()
		try("TryLock", m.TryLock(), false, "write-locked")
		try("TryRLock", m.TryRLock(), false, "write-locked")
		m.Unlock()

		try("TryLock", m.TryLock(), true, "unlocked")
		m.Unlock()

		try("TryRLock", m.TryRLock(), true, "unlocked")
		try("TryRLock", m.TryRLock(), true, "read-locked")
		try("TryLock", m.TryLock(), false, "read-locked")
		m.RUnlock()
		m.RUnlock()
		// A writer waiting at the queue head closes the lock to TryRLock.
		m.word.Or(rwWaiting)
		if m.TryRLock() || m.TryLock() {
			t.Fatal("TryRLock or TryLock succeeded with a writer waiting")
		}
		m.word.And(^rwWaiting)
		if m.word.Load() != 0 {
			t.Fatalf("word %#x, want 0", m.word.Load())
		}
	})
}

// parallelReader and doTestParallelReaders port Go's TestParallelReaders:
// numReaders readers hold the lock at once.
func parallelReader(m *RWLock, clocked, cunlock, cdone chan bool) {
	m.RLock()
	clocked <- true
	<-cunlock
	m.RUnlock()
	cdone <- true
}

func doTestParallelReaders(m *RWLock, numReaders, gomaxprocs int) {
	runtime.GOMAXPROCS(gomaxprocs)
	clocked := make(chan bool)
	cunlock := make(chan bool)
	cdone := make(chan bool)
	for i := 0; i < numReaders; i++ {
		go parallelReader(m, clocked, cunlock, cdone)
	}
	// Wait for all parallel RLocks to succeed.
	for i := 0; i < numReaders; i++ {
		<-clocked
	}
	for i := 0; i < numReaders; i++ {
		cunlock <- true
	}
	for i := 0; i < numReaders; i++ {
		<-cdone
	}
}

func TestRWParallelReaders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(-1))
	forEachRW(t, func(t *testing.T, m *RWLock) {
		doTestParallelReaders(m, 1, 4)
		doTestParallelReaders(m, 3, 4)
		doTestParallelReaders(m, 4, 2)
		if m.word.Load() != 0 {
			t.Fatalf("word %#x after the readers left, want 0", m.word.Load())
		}
	})
}

// rwReader and rwWriter port Go's reader and writer: activity counts the
// readers inside plus 10000 per writer inside, and each checks it.
func rwReader(rwm *RWLock, iterations int, activity *int32, cdone chan bool) {
	for i := 0; i < iterations; i++ {
		rwm.RLock()
		n := atomic.AddInt32(activity, 1)
		if n < 1 || n >= 10000 {
			rwm.RUnlock()
			panic(fmt.Sprintf("rlock(%d)\n", n))
		}
		for i := 0; i < 100; i++ {
		}
		atomic.AddInt32(activity, -1)
		rwm.RUnlock()
	}
	cdone <- true
}

func rwWriter(rwm *RWLock, iterations int, activity *int32, cdone chan bool) {
	for i := 0; i < iterations; i++ {
		rwm.Lock()
		n := atomic.AddInt32(activity, 10000)
		if n != 10000 {
			rwm.Unlock()
			panic(fmt.Sprintf("wlock(%d)\n", n))
		}
		for i := 0; i < 100; i++ {
		}
		atomic.AddInt32(activity, -10000)
		rwm.Unlock()
	}
	cdone <- true
}

func hammerRWLock(rwm *RWLock, gomaxprocs, numReaders, iterations int) {
	runtime.GOMAXPROCS(gomaxprocs)
	var activity int32
	cdone := make(chan bool)
	go rwWriter(rwm, iterations, &activity, cdone)
	var i int
	for i = 0; i < numReaders/2; i++ {
		go rwReader(rwm, iterations, &activity, cdone)
	}
	go rwWriter(rwm, iterations, &activity, cdone)
	for ; i < numReaders; i++ {
		go rwReader(rwm, iterations, &activity, cdone)
	}
	for i := 0; i < 2+numReaders; i++ {
		<-cdone
	}
}

// TestRWHammer is the rest of Go's TestRWMutex: two writers and up to ten
// readers at GOMAXPROCS 1, 4 and 10.
func TestRWHammer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(-1))
	forEachRW(t, func(t *testing.T, m *RWLock) {
		n := 1000
		if testing.Short() {
			n = 5
		}
		if !m.PV() {
			// A spinning queue head (native, TAS) waits for the Go
			// scheduler to preempt it (10 ms) whenever the goroutines
			// it waits for have no P: more goroutines than Ps is the
			// lock-waiter preemption collapse, not a test.
			n = min(n, 30)
		}
		wd := testkit.Watchdog(2*time.Minute, "RWLock hammer "+m.Mode().String(), rwDump(m))
		defer wd.Stop()
		for _, c := range [][2]int{{1, 1}, {1, 3}, {1, 10}, {4, 1}, {4, 3}, {4, 10}, {10, 1}, {10, 3}, {10, 10}, {10, 5}} {
			hammerRWLock(m, c[0], c[1], n)
		}
		if m.word.Load() != 0 {
			t.Fatalf("word %#x after the hammer, want 0", m.word.Load())
		}
	})
}

// TestRWRLocker ports Go's TestRLocker: RLocker read-locks, and respects
// the write lock.
func TestRWRLocker(t *testing.T) {
	forEachRW(t, func(t *testing.T, wl *RWLock) {
		var rl sync.Locker
		wlocked := make(chan bool, 1)
		rlocked := make(chan bool, 1)
		rl = wl.RLocker()
		n := 10
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < n; i++ {
				rl.Lock()
				rl.Lock()
				rlocked <- true
				wl.Lock()
				wlocked <- true
			}
		}()
		for i := 0; i < n; i++ {
			<-rlocked
			rl.Unlock()
			select {
			case <-wlocked:
				t.Fatal("RLocker() didn't read-lock it")
			default:
			}
			rl.Unlock()
			<-wlocked
			select {
			case <-rlocked:
				t.Fatal("RLocker() didn't respect the write lock")
			default:
			}
			wl.Unlock()
		}
		<-done
	})
}

// rwMisuse are Go's RWMutex misuse tests, each split into the good calls
// and the refused one; qspin panics instead of sync's fatal error.
var rwMisuse = []struct {
	name      string
	good, bad func(l *RWLock)
}{
	{"Unlock", func(l *RWLock) {}, (*RWLock).Unlock},
	{"Unlock2", (*RWLock).RLock, (*RWLock).Unlock},
	{"Unlock3", func(l *RWLock) { l.Lock(); l.Unlock() }, (*RWLock).Unlock},
	{"RUnlock", func(l *RWLock) {}, (*RWLock).RUnlock},
	{"RUnlock2", (*RWLock).Lock, (*RWLock).RUnlock},
	{"RUnlock3", func(l *RWLock) { l.RLock(); l.RUnlock() }, (*RWLock).RUnlock},
}

// TestRWMisuse checks that every misuse panics with a "qspin: ... unlocked"
// message and leaves the lock's word as it was before the refused call,
// with or without a halted queue head's H bit set.
func TestRWMisuse(t *testing.T) {
	for _, h := range []uint32{0, rwHalted} {
		for _, m := range rwMisuse {
			t.Run(fmt.Sprintf("%s/H=%v", m.name, h != 0), func(t *testing.T) {
				l := NewRW()
				m.good(l)
				l.word.Or(h)
				before := l.word.v.Load() // the read count above the word too
				msg := func() (msg string) {
					defer func() { msg = fmt.Sprint(recover()) }()
					m.bad(l)
					return "no panic"
				}()
				if !strings.HasPrefix(msg, "qspin: ") || !strings.Contains(msg, "unlocked") {
					t.Fatalf("panic %q; want a qspin: ... unlocked panic", msg)
				}
				if got := l.word.v.Load(); got != before {
					t.Fatalf("word %#x after the refused call, want %#x", got, before)
				}
			})
		}
	}
}
