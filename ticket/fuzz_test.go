package ticket

import (
	"fmt"
	"strings"
	"testing"
)

// Fuzz operations on the lock word, one per input byte (b % fuzzOps).
const (
	fuzzTryLock   = iota // TryLock: must succeed exactly when the lock is free
	fuzzLock             // Lock, only when free (one goroutine cannot wait)
	fuzzUnlock           // Unlock; panics when free
	fuzzEnqueue          // another locker takes a ticket (Lock's atomic add) and queues
	fuzzSetFlag          // a PV waiter marks the slowpath (halt's atomic or)
	fuzzClearFlag        // the flag is cleared, as unlockSlow's CAS does
	fuzzOps
)

// fuzzMaxQueued bounds the tickets held or awaited at once, far below the
// 2^31 that would alias.
const fuzzMaxQueued = 64

// fuzzWordModel is the reference: head and tail as plain counters that are only
// reduced mod 2^32 when compared, and the PV slowpath flag.
type fuzzWordModel struct {
	inc        uint64
	head, tail uint64
	flag       bool
}

func (m *fuzzWordModel) free() bool     { return m.head == m.tail }
func (m *fuzzWordModel) queued() uint64 { return (m.tail - m.head) / m.inc }

// unlock serves the next ticket. A PV unlock that sees the flag clears it
// (unlockSlow's CAS) only if nobody is left queued; otherwise it kicks, and
// nobody is published in this single-goroutine test.
func (m *fuzzWordModel) unlock() {
	m.head += m.inc
	if m.flag && m.free() {
		m.flag = false
	}
}

// FuzzTicketWord drives a Lock through a fuzzed sequence of operations from
// an arbitrary starting ticket and checks the word against fuzzWordModel after
// every step: the encoding (head low, tail high, flag in tail's low bit),
// the carry cancellation when head wraps, tail's overflow out of the word,
// the flag's stickiness and the query methods.
func FuzzTicketWord(f *testing.F) {
	all := []byte{fuzzLock, fuzzEnqueue, fuzzSetFlag, fuzzUnlock, fuzzEnqueue, fuzzUnlock, fuzzTryLock,
		fuzzUnlock, fuzzUnlock, fuzzTryLock, fuzzClearFlag, fuzzUnlock, fuzzLock, fuzzSetFlag, fuzzUnlock}
	for _, h := range []uint32{0, 2, 1 << 31, 1<<32 - 4, 1<<32 - 2, 1<<32 - 1} {
		for _, native := range []bool{false, true} {
			f.Add(native, h, all)
		}
	}
	// Many tickets across the wrap point, and a wrap with the flag set.
	f.Add(true, uint32(1<<32-1), []byte{fuzzLock, fuzzEnqueue, fuzzEnqueue, fuzzUnlock, fuzzUnlock, fuzzUnlock, fuzzLock, fuzzUnlock})
	f.Add(false, uint32(1<<32-2), []byte{fuzzLock, fuzzSetFlag, fuzzUnlock, fuzzTryLock, fuzzSetFlag, fuzzEnqueue, fuzzUnlock, fuzzUnlock})
	f.Add(false, uint32(1<<32-2), []byte{fuzzEnqueue, fuzzSetFlag, fuzzEnqueue, fuzzUnlock, fuzzClearFlag, fuzzUnlock, fuzzSetFlag, fuzzUnlock})

	f.Fuzz(func(t *testing.T, native bool, h uint32, ops []byte) {
		l := New()
		if native {
			l = New(Native())
		}
		inc := uint32(consts[l.mode].inc)
		h -= h % inc // tickets are multiples of INC
		l.word.Store(uint64(h)<<tailShift | uint64(h))
		m := &fuzzWordModel{inc: uint64(inc), head: uint64(h), tail: uint64(h)}
		checkWord(t, l, m, "start")
		for i, b := range ops {
			op := b % fuzzOps
			step := fmt.Sprintf("op %d (%d)", i, op)
			switch op {
			case fuzzTryLock:
				before := l.word.Load()
				got := l.TryLock()
				if got != m.free() {
					t.Fatalf("%s: TryLock = %v on a lock with %d tickets out", step, got, m.queued())
				}
				if got {
					m.tail += m.inc
				} else if l.word.Load() != before {
					t.Fatalf("%s: failed TryLock changed the word %#x -> %#x", step, before, l.word.Load())
				}
			case fuzzLock:
				if !m.free() {
					continue
				}
				l.Lock()
				m.tail += m.inc
			case fuzzUnlock:
				if m.free() {
					before := l.word.Load()
					if msg := fuzzUnlockPanic(l); !strings.Contains(msg, "unlock of unlocked lock") {
						t.Fatalf("%s: Unlock of a free lock: panic %q", step, msg)
					}
					if l.word.Load() != before {
						t.Fatalf("%s: rejected Unlock changed the word", step)
					}
					continue
				}
				l.Unlock()
				m.unlock()
			case fuzzEnqueue:
				if m.queued() >= fuzzMaxQueued {
					continue
				}
				l.word.Add(uint64(inc) << tailShift)
				m.tail += m.inc
			case fuzzSetFlag:
				if native {
					continue
				}
				l.word.Or(flagBit)
				m.flag = true
			case fuzzClearFlag:
				if native {
					continue
				}
				l.word.And(^flagBit)
				m.flag = false
			}
			checkWord(t, l, m, step)
		}
		// Drain: serving every ticket must leave a free lock that works.
		for !m.free() {
			l.Unlock()
			m.unlock()
			checkWord(t, l, m, "drain")
		}
		if !l.TryLock() {
			t.Fatal("TryLock fails on the drained lock")
		}
		m.tail += m.inc
		checkWord(t, l, m, "final TryLock")
		l.Unlock()
		m.unlock()
		checkWord(t, l, m, "final Unlock")
	})
}

// checkWord compares the decoded word and the query methods with the model.
func checkWord(t *testing.T, l *Lock, m *fuzzWordModel, step string) {
	t.Helper()
	w := l.word.Load()
	head, tail := split(w &^ consts[l.mode].flag)
	if head != uint32(m.head) || tail != uint32(m.tail) {
		t.Fatalf("%s: word %#x decodes to head %#x tail %#x, want head %#x tail %#x",
			step, w, head, tail, uint32(m.head), uint32(m.tail))
	}
	flag := w&flagBit != 0 && l.PV()
	if flag != m.flag {
		t.Fatalf("%s: word %#x has flag %v, want %v", step, w, flag, m.flag)
	}
	if l.IsLocked() != !m.free() {
		t.Fatalf("%s: IsLocked = %v with %d tickets out", step, l.IsLocked(), m.queued())
	}
	if l.IsContended() != (m.queued() > 1) {
		t.Fatalf("%s: IsContended = %v with %d tickets out", step, l.IsContended(), m.queued())
	}
}

func fuzzUnlockPanic(l *Lock) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	l.Unlock()
	return ""
}
