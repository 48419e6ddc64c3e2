package ticket

import (
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// Option configures a Lock made by New.
type Option func(*Lock)

// Native selects the native variant: tickets step by 1 and waiters only
// spin, never halt.
func Native() Option { return func(l *Lock) { l.mode = ModeNative } }

// SpinThreshold sets how many times a PV waiter polls the head before it
// halts on its ticket (default pvlock.DefaultSpinThreshold). 0 restores
// the default.
func SpinThreshold(n uint32) Option { return func(l *Lock) { l.spin.SetThreshold(n) } }

// SpinDuration sets the PV spin threshold in time rather than polls: d
// over the measured cost of one poll on this machine.
func SpinDuration(d time.Duration) Option { return func(l *Lock) { l.spin.SetDuration(d) } }

// NoRestriction turns the lock's concurrency restriction off: every waiter
// takes a ticket, however saturated the lock (see pvlock.Policy.Restrict,
// which turns it off for every lock).
func NoRestriction() Option { return func(l *Lock) { l.unrestrict = true } }

// Name makes the lock count in the statistics of the ticket locks of its
// mode named name (lockstat.NameStats says how names are shared and
// limited), not in the unnamed locks' (Stats). A name that is not valid
// UTF-8 panics.
func Name(name string) Option {
	named := lockcore.NameStats("ticket", modeStats[:], name)
	return func(l *Lock) { l.named = named() }
}

// New returns an unlocked Lock configured by opts (PV by default).
func New(opts ...Option) *Lock { return lockcore.New(opts) }

// Mode reports the lock's variant.
func (l *Lock) Mode() Mode { return l.mode }

// PV reports whether l is the PV variant.
func (l *Lock) PV() bool { return l.mode == ModePV }
