package qspin

import (
	"time"

	"github.com/pvlock/pvlock/internal/lockcore"
)

// Option configures a Lock made by New.
type Option func(*Lock)

// Native selects the native queued lock: waiters spin and never halt.
// Of Native, TAS and NoStealing the last one given wins.
func Native() Option { return func(l *Lock) { l.mode = ModeNative } }

// TAS selects the unfair test-and-set lock (the kernel's virt_spin_lock):
// one word, spin until free, then compare-and-swap. No queue, no halts.
func TAS() Option { return func(l *Lock) { l.mode = ModeTAS } }

// NoStealing selects the PV lock without lock stealing: a locker never
// takes the lock ahead of queued waiters.
func NoStealing() Option { return func(l *Lock) { l.mode = ModePVNoSteal } }

// NoRestriction turns the lock's concurrency restriction off: every waiter
// enters the slow path, however saturated the lock (see
// pvlock.Policy.Restrict, which turns it off for every lock).
func NoRestriction() Option { return func(l *Lock) { l.unrestrict = true } }

// SpinThreshold sets how many times a PV waiter polls before it halts
// (default pvlock.DefaultSpinThreshold); it also bounds one lock-stealing
// attempt. 0 restores the default.
func SpinThreshold(n uint32) Option { return func(l *Lock) { l.spin.SetThreshold(n) } }

// SpinDuration is SpinThreshold given as a time, converted to polls with
// this machine's measured cost of one poll.
func SpinDuration(d time.Duration) Option { return func(l *Lock) { l.spin.SetDuration(d) } }

// Name gives the lock the statistics of the qspin locks named name, of
// its mode, apart from the unnamed locks' (Stats; lockstat.NameStats has
// the rules). It panics if name is not valid UTF-8.
func Name(name string) Option {
	named := lockcore.NameStats("qspin", modeStats[:], name)
	return func(l *Lock) { l.named = named() }
}

// New returns an unlocked Lock configured by opts (PV with stealing by
// default).
func New(opts ...Option) *Lock { return lockcore.New(opts) }

// NewTAS returns an unlocked test-and-set Lock; it is New(TAS()).
func NewTAS() *Lock { return New(TAS()) }

// Mode reports the lock's variant.
func (l *Lock) Mode() Mode { return l.mode }

// PV reports whether l is a PV variant (with or without stealing).
func (l *Lock) PV() bool { return l.mode == ModePV || l.mode == ModePVNoSteal }
