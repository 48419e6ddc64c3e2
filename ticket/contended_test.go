package ticket

import (
	"fmt"
	"testing"

	"github.com/pvlock/pvlock/pvlock"
)

var _ pvlock.Contender = (*Lock)(nil) // usable by pvlock.CondRelock

// TestIsContendedExactStates sets the lock word to constructed states,
// including both sides of the 32-bit wrap and a stale slowpath flag, and
// checks IsContended and IsLocked against the number of tickets taken.
func TestIsContendedExactStates(t *testing.T) {
	for _, v := range variants[:2] {
		inc := uint32(consts[v.new().mode].inc)
		for _, head := range []uint32{0, 1000 * inc, 0 - inc, 0 - 2*inc, 0 - 3*inc} {
			for taken := uint32(0); taken <= 3; taken++ { // holder + waiters
				for _, flag := range []bool{false, true} {
					if flag && inc == 1 {
						continue // native locks have no flag
					}
					l := v.new()
					tail := head + taken*inc
					w := uint64(tail)<<tailShift | uint64(head)
					if flag {
						w |= flagBit
					}
					l.word.Store(w)
					name := fmt.Sprintf("%s head=%#x taken=%d flag=%v", v.name, head, taken, flag)
					if got, want := l.IsLocked(), taken > 0; got != want {
						t.Errorf("%s: IsLocked = %v, want %v", name, got, want)
					}
					if got, want := l.IsContended(), taken > 1; got != want {
						t.Errorf("%s: IsContended = %v, want %v", name, got, want)
					}
				}
			}
		}
	}
}
