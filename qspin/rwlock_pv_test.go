package qspin

import (
	"sync"
	"testing"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/testkit"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
)

// keyOf is l's key in rwHeads.
func keyOf(l *RWLock) uintptr { return lockcore.Key(l) }

// haltedHead runs lock on a new goroutine, which must become the queue
// head of l and halt there (H set, published), and returns a channel
// closed once lock returned.
func haltedHead(t *testing.T, l *RWLock, who string, lock func()) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		lock()
		close(done)
	}()
	testkit.WaitFor(t, "the "+who+" head to halt", func() bool {
		return l.word.Load()&rwHalted != 0 && rwHeads.Lookup(keyOf(l), 0)
	})
	return done
}

// haltingRW returns an RWLock whose queue heads halt at once, and raises
// the halt watchdog for the rest of the test (locktest.LongHaltTimeout).
func haltingRW(t *testing.T) *RWLock {
	t.Cleanup(locktest.LongHaltTimeout())
	return NewRW(SpinThreshold(1))
}

// rwEvents returns the function that returns the events RWLocks of l's
// mode have counted since the call.
func rwEvents(l *RWLock) func() lockstat.Snapshot {
	st := RWStats(l.Mode())
	before := st.Snapshot()
	return func() lockstat.Snapshot { return st.Snapshot().Sub(before) }
}

// headIn waits for the head that haltedHead started to return from its
// lock call, and checks the word then: want, with who in.
func headIn(t *testing.T, l *RWLock, done <-chan struct{}, want uint32, who string) {
	t.Helper()
	<-done
	if v := l.word.Load(); v != want {
		t.Fatalf("word %#x with %s in, want %#x", v, who, want)
	}
}

// wantEvents checks the counts of events in the difference d of two
// snapshots.
func wantEvents(t *testing.T, d lockstat.Snapshot, want map[string]uint64) {
	t.Helper()
	for ev, n := range want {
		if got := d.Get(ev); got != n {
			t.Errorf("%s = %d, want %d", ev, got, n)
		}
	}
}

// TestRWReaderHeadHaltsAndIsKicked drives a reader queue head into its
// halt behind a writer and checks that the writer's Unlock kicks it:
// H set while it waits, cleared when it is in, and one halt, one kick and
// one slow path counted, with no halt timeout.
func TestRWReaderHeadHaltsAndIsKicked(t *testing.T) {
	l := haltingRW(t)
	events := rwEvents(l)
	l.Lock()
	done := haltedHead(t, l, "reader", l.RLock)
	l.Unlock()
	headIn(t, l, done, rwBias, "one reader")
	l.RUnlock()
	wantEvents(t, events(), map[string]uint64{ReadSlowpath: 1, ReadHalts: 1, WriteKicks: 1, RWHaltTimeouts: 0})
	if rwHeads.Lookup(keyOf(l), 0) {
		t.Error("the head is still published")
	}
}

// TestRWWriterHeadHaltsAndIsKicked drives a writer queue head into its
// halt behind two readers and checks that the last of them kicks it, and
// the first does not.
func TestRWWriterHeadHaltsAndIsKicked(t *testing.T) {
	l := haltingRW(t)
	events := rwEvents(l)
	l.RLock()
	l.RLock()
	done := haltedHead(t, l, "writer", l.Lock)
	if v := l.word.Load(); v != 2*rwBias|rwWaiting|rwHalted {
		t.Fatalf("word %#x, want two readers, W and H", v)
	}
	l.RUnlock()
	if d := events(); d.Get(ReadKicks) != 0 {
		t.Fatalf("a reader kicked the head while another was inside")
	}
	l.RUnlock()
	headIn(t, l, done, rwLocked, "the writer")
	l.Unlock()
	wantEvents(t, events(), map[string]uint64{WriteSlowpath: 1, WriteHalts: 1, ReadKicks: 1, RWHaltTimeouts: 0})
}

// TestRWQueuedReaderKicksWriterHead: a reader that finds W and takes its
// count back may be the last count a halted writer head waits for; its
// leaving must kick the head like an RUnlock (read-unbias).
func TestRWQueuedReaderKicksWriterHead(t *testing.T) {
	l := haltingRW(t)
	// A writer head halted on W alone but for one count: the state a
	// late reader leaves behind when it added its count and found W.
	l.word.Store(rwWaiting | rwBias | rwHalted)
	w := newParkedHead(t, l)
	l.readerLeft(l.word.Add(rwUnbias), true)
	w.wait(t)
	if v := l.word.Load(); v != rwWaiting|rwHalted {
		t.Fatalf("word %#x", v)
	}
}

// TestRWGoroutinesSleepBehindWriter: goroutines that find a writer sleep
// at once, as the waiters of sync.RWMutex do. A writer queue head behind a
// writer halts with the default threshold, and a reader behind them waits
// outside the wait lock's gate (passive) though no active waiter is
// there (without stealing, an active reader would queue instead). Both go
// in, in order, when the writers leave.
func TestRWGoroutinesSleepBehindWriter(t *testing.T) {
	defer locktest.LongHaltTimeout()()
	for _, opts := range [][]Option{nil, {NoStealing()}} {
		l := NewRW(opts...)
		t.Run(l.Mode().String(), func(t *testing.T) { testRWSleepBehindWriter(t, l) })
	}
}

func testRWSleepBehindWriter(t *testing.T, l *RWLock) {
	events := rwEvents(l)
	l.Lock()
	wrote, read := make(chan struct{}), make(chan struct{})
	go func() {
		l.Lock()
		l.Unlock()
		close(wrote)
	}()
	testkit.WaitFor(t, "the writer head to halt", func() bool {
		return rwHeads.Lookup(keyOf(l), 0)
	})
	go func() {
		l.RLock()
		l.RUnlock()
		close(read)
	}()
	testkit.WaitFor(t, "the reader to wait outside the gate", func() bool {
		return l.wait.gate.Passive() == 1
	})
	if n := l.wait.gate.Active(); n != 0 {
		t.Errorf("%d active waiters at the wait lock's gate, want 0", n)
	}
	l.Unlock()
	<-wrote
	<-read
	if v := l.word.Load(); v != 0 {
		t.Errorf("word %#x after everyone left, want 0", v)
	}
	if d := events(); d.Get(WriteHalts) != 1 || d.Get(RWHaltTimeouts) != 0 {
		t.Errorf("writer head halts %d, halt timeouts %d, want 1 and 0", d.Get(WriteHalts), d.Get(RWHaltTimeouts))
	}
}

// parkedHead is a stand-in queue head published in rwHeads for a test.
type parkedHead struct {
	done chan struct{}
}

// newParkedHead publishes a waiter for l, as a halted head does, and
// waits for a kick in a goroutine.
func newParkedHead(t *testing.T, l *RWLock) *parkedHead {
	t.Helper()
	h := &parkedHead{done: make(chan struct{})}
	var ready sync.WaitGroup
	ready.Add(1)
	go func() {
		defer close(h.done)
		w := kick.NewWaiter(kick.Park)
		w.Arm()
		rwHeads.Publish(w, keyOf(l), 0)
		ready.Done()
		w.Halt(0) // no timeout: only a kick ends it
		rwHeads.Withdraw(w)
	}()
	ready.Wait()
	return h
}

func (h *parkedHead) wait(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "the kick", func() bool {
		select {
		case <-h.done:
			return true
		default:
			return false
		}
	})
}

// TestRWStatsCountAcquisitions checks that reads and writes are counted
// 1024 at a time per lock, and that misuse is not counted.
func TestRWStatsCountAcquisitions(t *testing.T) {
	defer locktest.Statistics(true)()
	for _, v := range variants() {
		l := NewRW(v.opts...)
		events := rwEvents(l)
		for range 2 * batch {
			l.RLock()
			l.RUnlock()
			l.Lock()
			l.Unlock()
		}
		d := events()
		if d.Get(ReadAcquisitions) != 2*batch || d.Get(WriteAcquisitions) != 2*batch {
			t.Errorf("%s: read %d write %d acquisitions, want %d each", v.name,
				d.Get(ReadAcquisitions), d.Get(WriteAcquisitions), 2*batch)
		}
		if d.Get(ReadSlowpath)+d.Get(WriteSlowpath) != 0 {
			t.Errorf("%s: uncontended use took the slow path", v.name)
		}
	}
}

// Store sets the count word to x and the read count above it to 0, for
// the tests that build a state by hand.
func (w *rwWord) Store(x uint32) { w.v.Store(uint64(x)) }

// waitSlowReader starts a reader that finds l write-locked, and returns
// once it has queued and, as the queue head, added its count again: the
// wait lock is held and the count word holds the writer and the reader.
// Its channel is closed once the reader holds the lock.
func waitSlowReader(t *testing.T, l *RWLock) chan struct{} {
	t.Helper()
	in := make(chan struct{})
	go func() {
		l.RLock()
		close(in)
	}()
	testkit.WaitFor(t, "the reader to queue", func() bool { return l.wait.IsLocked() && l.word.Load()&^rwHalted == rwLocked|rwBias })
	return in
}

// TestRWReadCount checks the read count above the count word: one per
// RLock, fast or slow, and per successful TryRLock; none for a failed
// TryRLock or a refused RUnlock; and nothing else changes it.
func TestRWReadCount(t *testing.T) {
	forEachRW(t, func(t *testing.T, l *RWLock) {
		want := func(n uint32, what string) {
			t.Helper()
			if got := l.word.reads(); got != n {
				t.Fatalf("after %s: %d reads counted, want %d", what, got, n)
			}
		}
		for range 10 {
			l.RLock()
			l.RUnlock()
		}
		want(10, "10 RLocks")
		if !l.TryRLock() {
			t.Fatal("TryRLock of a free lock failed")
		}
		l.RUnlock()
		want(11, "a TryRLock")
		l.Lock()
		if l.TryRLock() {
			t.Fatal("TryRLock of a write-locked lock succeeded")
		}
		want(11, "a failed TryRLock")
		in := waitSlowReader(t, l)
		l.Unlock()
		<-in
		want(12, "a slow-path RLock")
		l.RUnlock()
		l.Lock()
		l.Unlock()
		if l.TryLock() {
			l.Unlock()
		}
		want(12, "Lock, Unlock and TryLock")
		func() {
			defer func() { _ = recover() }()
			l.RUnlock()
		}()
		want(12, "a refused RUnlock")
		if l.word.Load() != 0 {
			t.Fatalf("count word %#x, want 0", l.word.Load())
		}
	})
}

// TestRWReadCountFlush checks the batch-th read's flush to the statistics
// where it is easy to lose: a batch-th read that takes the slow path
// flushes once it holds the lock, and a failed TryRLock at a batch-th
// count flushes nothing, leaving it to the next read.
func TestRWReadCountFlush(t *testing.T) {
	defer locktest.Statistics(true)()
	forEachRW(t, func(t *testing.T, l *RWLock) {
		st := RWStats(l.Mode())
		reads := func() uint64 { return st.Snapshot().Get(ReadAcquisitions) }
		// The next read is the batch-th.
		l.word.v.Store(uint64(batch-1) << 32)
		before := reads()
		l.Lock()
		in := waitSlowReader(t, l)
		if got := reads() - before; got != 0 {
			t.Fatalf("%d reads flushed before the slow reader got in", got)
		}
		l.Unlock()
		<-in
		if got := reads() - before; got != batch {
			t.Fatalf("the slow batch-th reader flushed %d reads, want %d", got, batch)
		}
		l.RUnlock()

		l.word.v.Store(uint64(batch-1) << 32)
		before = reads()
		l.Lock()
		if l.TryRLock() {
			t.Fatal("TryRLock of a write-locked lock succeeded")
		}
		l.Unlock()
		if got := reads() - before; got != 0 {
			t.Fatalf("a failed TryRLock flushed %d reads", got)
		}
		l.RLock()
		l.RUnlock()
		if got := reads() - before; got != batch {
			t.Fatalf("the batch-th read after a failed TryRLock flushed %d reads, want %d", got, batch)
		}
		if got := l.word.reads(); got != batch {
			t.Fatalf("%d reads counted, want %d", got, batch)
		}
	})
}

// TestRWStatsKinds checks the statistics' labels.
func TestRWStatsKinds(t *testing.T) {
	for _, m := range []Mode{ModePV, ModePVNoSteal, ModeNative, ModeTAS} {
		s := RWStats(m)
		if s.Kind() != KindRWLock || s.Mode() != m.String() {
			t.Errorf("RWStats(%v): kind %q mode %q", m, s.Kind(), s.Mode())
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("RWStats of an unknown mode did not panic")
		}
	}()
	RWStats(Mode(99))
}
