package ticket

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/lockstat"
)

// Option configures a Lock made by New.
type Option func(*Lock)

// Native selects the native variant: tickets step by 1 and waiters only
// spin, never halt.
func Native() Option { return func(l *Lock) { l.mode = ModeNative } }

// SpinThreshold sets how many times a PV waiter polls the lock before it
// halts (default pvlock.DefaultSpinThreshold). 0 restores the default.
func SpinThreshold(n uint32) Option { return func(l *Lock) { l.spin.SetThreshold(n) } }

// SpinDuration sets the PV spin threshold as a time, converted to polls
// with this machine's measured cost of one poll.
func SpinDuration(d time.Duration) Option { return func(l *Lock) { l.spin.SetDuration(d) } }

// Name gives the lock statistics of its own, under name: its counters are
// those of the locks of its kind and mode with that name, apart from the
// unnamed locks' (Stats), and the Prometheus metrics label them name=name.
// Locks that share a name share the statistics. Names come from a small
// fixed set: at most lockstat.MaxLockNames (64) names per lock kind have
// statistics of their own, and a lock named after that counts with the
// unnamed ones (pvlock.LockNameOverflows counts it). The empty name is no
// name. Name panics if name is not valid UTF-8, which no metric label may
// hold.
func Name(name string) Option {
	if !utf8.ValidString(name) {
		panic(fmt.Sprintf("%s: lock name %q is not valid UTF-8", "ticket", name))
	}
	return func(l *Lock) { l.named = lockstat.NameStats(modeStats[:], name) }
}

// NoRestriction turns the lock's concurrency restriction off: every waiter
// takes a ticket, however saturated the lock (see pvlock.Policy.Restrict,
// which turns it off for every lock).
func NoRestriction() Option { return func(l *Lock) { l.unrestrict = true } }

// New returns an unlocked Lock configured by opts (PV by default).
func New(opts ...Option) *Lock { return lockcore.New(opts) }

// Mode reports the lock's variant.
func (l *Lock) Mode() Mode { return l.mode }

// PV reports whether l is the PV variant.
func (l *Lock) PV() bool { return l.mode == ModePV }
