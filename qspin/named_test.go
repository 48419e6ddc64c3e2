package qspin

import (
	"sync"
	"testing"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/lockstat"
)

// TestNameCountsApart: a named lock counts in its name's statistics, of
// the mode it ends up with (Name given before Native), and not in the
// unnamed ones; a second lock with the name shares them.
func TestNameCountsApart(t *testing.T) {
	mode := func(m string) Mode {
		if m == ModeNative.String() {
			return ModeNative
		}
		return ModePV
	}
	locktest.CheckNamedLocks(t, locktest.NamedLocks{
		Pkg:   "qspin",
		Modes: []string{ModePV.String(), ModeNative.String()},
		New: func(name, m string) sync.Locker {
			if mode(m) == ModeNative {
				return New(Name(name), Native())
			}
			return New(Name(name))
		},
		Unnamed:  func(m string) *lockstat.Stats { return Stats(mode(m)) },
		Name:     func(name string) { Name(name) },
		Batch:    2048,
		Acquired: Acquisitions,
	})
}
