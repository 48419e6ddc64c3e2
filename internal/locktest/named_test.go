package locktest_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// namedLocks is the locktest.NamedLocks of a lock package whose modes pv
// and native are selected by no option and by native: newLock is its New,
// name its Name option, stats its Stats.
func namedLocks[M fmt.Stringer, O any, L sync.Locker](pkg string, pv, native M, newLock func(...O) L,
	name func(string) O, nativeOpt O, stats func(M) *lockstat.Stats, acquired string) locktest.NamedLocks {
	mode := func(m string) M {
		if m == native.String() {
			return native
		}
		return pv
	}
	return locktest.NamedLocks{
		Pkg:   pkg,
		Modes: []string{pv.String(), native.String()},
		New: func(n, m string) sync.Locker {
			if m == native.String() {
				return newLock(name(n), nativeOpt) // Name before Native: the mode it ends up with counts
			}
			return newLock(name(n))
		},
		Unnamed:  func(m string) *lockstat.Stats { return stats(mode(m)) },
		Name:     func(n string) { name(n) },
		Batch:    2048,
		Acquired: acquired,
	}
}

// TestNameCountsApart: a named lock of either package counts in its
// name's statistics, of the mode it ends up with (Name given before
// Native), and not in the unnamed ones; a second lock with the name
// shares them.
func TestNameCountsApart(t *testing.T) {
	t.Run("ticket", func(t *testing.T) {
		locktest.CheckNamedLocks(t, namedLocks("ticket", ticket.ModePV, ticket.ModeNative, ticket.New, ticket.Name, ticket.Native(), ticket.Stats, ticket.Acquisitions))
	})
	t.Run("qspin", func(t *testing.T) {
		locktest.CheckNamedLocks(t, namedLocks("qspin", qspin.ModePV, qspin.ModeNative, qspin.New, qspin.Name, qspin.Native(), qspin.Stats, qspin.Acquisitions))
	})
}
