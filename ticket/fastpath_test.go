package ticket

import (
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
)

// TestAcquisitionsBatched checks that a lock adds its releases to the
// acquisitions counter a batch at a time: nothing for the first
// batchHeads/inc-1 releases, all of them at the last one, nothing while
// statistics are off.
func TestAcquisitionsBatched(t *testing.T) {
	for _, v := range variants {
		l := v.new()
		inc := uint32(consts[l.mode].inc)
		per := uint64(batchHeads / inc)
		st := Stats(l.Mode())
		before := st.Snapshot()
		for i := uint64(1); i <= per; i++ {
			l.Lock()
			l.Unlock()
			if i < per-1 {
				continue
			}
			want := uint64(0)
			if i == per {
				want = per
			}
			if got := st.Snapshot().Sub(before).Get(Acquisitions); got != want {
				t.Errorf("%s: after %d acquisitions %d counted, want %d", v.name, i, got, want)
			}
		}
		restore := locktest.Statistics(false)
		before = st.Snapshot()
		for i := uint64(0); i < 2*per; i++ {
			l.Lock()
			l.Unlock()
		}
		restore()
		if got := st.Snapshot().Sub(before).Get(Acquisitions); got != 0 {
			t.Errorf("%s: %d acquisitions counted with statistics off", v.name, got)
		}
	}
}

// TestRefusedUnlockLeavesWord checks that an Unlock of an unlocked lock
// panics without writing the word, whatever state the word is in: a PV
// word with a stale slowpath flag, a head about to wrap, a head at a batch
// boundary of the acquisitions count.
func TestRefusedUnlockLeavesWord(t *testing.T) {
	for _, v := range variants {
		inc := uint32(consts[v.new().mode].inc)
		for _, head := range []uint32{0, 2, batchHeads - inc, -inc, -(2 * inc)} {
			words := []uint64{uint64(head)<<tailShift | uint64(head)}
			if v.new().PV() {
				words = append(words, uint64(head|1)<<tailShift|uint64(head))
			}
			for _, w := range words {
				l := v.new()
				l.word.Store(w)
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s: Unlock of unlocked word %#x did not panic", v.name, w)
						}
					}()
					l.Unlock()
				}()
				if got := l.word.Load(); got != w {
					t.Errorf("%s: refused Unlock changed the word %#x to %#x", v.name, w, got)
				}
				l.Lock()
				l.Unlock()
				if l.IsLocked() {
					t.Errorf("%s: lock from word %#x held after Lock+Unlock", v.name, w)
				}
			}
		}
	}
}
