package torture

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/pvlock"
)

// MaxOvercommit is the largest overcommit factor Run accepts.
const MaxOvercommit = 64

// DefaultWatchdog is the default halt watchdog of a run. It is longer
// than the locks' own default (pvlock.DefaultHaltTimeout) because a
// torture overcommits on purpose, often on a shared, loaded host: a
// waiter queued behind several descheduled holders can legitimately
// sleep for a second. A lost wake-up still shows, only later: its waiter
// sleeps until the watchdog, even if that is after the end of the run.
const DefaultWatchdog = 5 * time.Second

// MaxWork bounds Config.Work.
const MaxWork = 1 << 16

// Config is one torture run. The zero value of every field but Lock and
// Duration means its default.
type Config struct {
	// Lock is the lock kind under test (see LookupLock).
	Lock Lock
	// Overcommit is the number of writer vCPUs per physical CPU
	// (default 2); VCPUs, if set, gives the count directly.
	Overcommit float64
	VCPUs      int
	// Readers, if positive, is the rw mode, locktorture's rw_lock: that
	// many reader vCPUs run beside the writers, read-locking the lock
	// (its RLock and RUnlock: the lock must have a read side, see
	// locks.RWLocker) and checking that no writer is inside.
	Readers int
	// CPUs are the physical CPUs; nil means all allowed CPUs.
	CPUs []int
	// Pinning places the vCPUs before any shuffle (default PinEach).
	Pinning pvlock.Pinning
	// Duration is the length of the run.
	Duration time.Duration
	// Interval is the period of the statistics lines (default: one line,
	// at the end).
	Interval time.Duration
	// Seed seeds the vCPUs' random critical sections and the shuffles.
	Seed uint64
	// Work bounds the random busy work inside and between critical
	// sections, in PAUSEs (default 32).
	Work int
	// LongHold is the length of an occasional long hold of the lock (0:
	// none); on average one acquisition in LongHoldEvery does it
	// (default 100000).
	LongHold      time.Duration
	LongHoldEvery int
	// Stutter, if positive, pauses every vCPU for Stutter/4 (at least
	// 1ms) after each Stutter of running; all restart at once.
	Stutter time.Duration
	// Shuffle, if positive, re-pins the vCPU threads to other CPUs every
	// Shuffle.
	Shuffle time.Duration
	// Watchdog bounds a single halt during the run (pvlock.Policy.HaltTimeout;
	// the previous bound is restored afterwards). A halt that times out
	// counts as a halt timeout, and as a lost wake-up if the waiter's turn
	// had come and no kick followed within one more Watchdog. Default: the larger of DefaultWatchdog and 4·LongHold.
	Watchdog time.Duration
	// StarveAfter is how long a vCPU may wait in Lock while the others
	// acquire the lock more than 4·VCPUs times before the run fails as
	// starved (default 1s). A FIFO lock never passes a waiter that often,
	// however slow it is.
	StarveAfter time.Duration
	// StallAfter is how long a vCPU may wait in Lock at all before the
	// run fails as stalled (default 5·Watchdog). A vCPU still in Lock
	// StallAfter after the end of the run is given up on as stuck.
	StallAfter time.Duration
	// FailUnfair makes locktorture's "???" a failure: the busiest vCPU
	// making more than twice the acquisitions of the idlest over the
	// whole run. Off by default: on overcommitted vCPUs even a FIFO lock
	// shows such spreads, because a vCPU descheduled between two
	// acquisitions holds no place in the queue while the running vCPUs
	// pass the lock around fast.
	FailUnfair bool
	// Out receives the statistics lines and the final SUCCESS or FAILURE
	// line; nil discards them.
	Out io.Writer

	// noPlain drops the plain (non-atomic) counter from the critical
	// section. Tests of deliberately broken locks set it: their overlap
	// is the point, and the race detector would abort on it before the
	// torture could report it.
	noPlain bool
}

// WithDefaults returns c with its defaults filled in, or an error naming
// the first invalid field. Run calls it; a command line can call it to
// reject bad flags before starting anything. CPUs are checked by Run,
// against the CPUs the process may use.
func (c Config) WithDefaults() (Config, error) {
	if c.Lock.New == nil {
		return c, errors.New("torture: no lock to torture (Config.Lock.New is nil)")
	}
	if c.Lock.Name == "" {
		c.Lock.Name = "lock"
	}
	switch {
	case c.VCPUs < 0:
		return c, fmt.Errorf("torture: %d vCPUs: must be positive", c.VCPUs)
	case c.VCPUs > pvlock.MaxVCPUs:
		return c, fmt.Errorf("torture: %d vCPUs exceed pvlock.MaxVCPUs (%d)", c.VCPUs, pvlock.MaxVCPUs)
	case c.VCPUs == 0 && c.Overcommit == 0:
		c.Overcommit = 2
	}
	if c.VCPUs == 0 && (!(c.Overcommit > 0) || c.Overcommit > MaxOvercommit) {
		return c, fmt.Errorf("torture: overcommit %v must be a number in (0, %d]", c.Overcommit, MaxOvercommit)
	}
	switch {
	case c.Readers < 0 || c.Readers > pvlock.MaxVCPUs:
		return c, fmt.Errorf("torture: %d readers must be in [0, %d]", c.Readers, pvlock.MaxVCPUs)
	case c.Readers > 0:
		if _, ok := c.Lock.New().(locks.RWLocker); !ok {
			return c, fmt.Errorf("torture: lock %s has no read side (RLock, RUnlock): the rw mode (readers) needs a reader-writer lock", c.Lock.Name)
		}
	}
	if c.Pinning != pvlock.PinEach && c.Pinning != pvlock.PinFloat {
		return c, fmt.Errorf("torture: unknown pinning %v", c.Pinning)
	}
	if c.Duration <= 0 {
		return c, fmt.Errorf("torture: duration %v must be positive", c.Duration)
	}
	if err := positive("interval", c.Interval); err != nil {
		return c, err
	}
	if c.Interval == 0 || c.Interval > c.Duration {
		c.Interval = c.Duration
	}
	switch {
	case c.Work < 0 || c.Work > MaxWork:
		return c, fmt.Errorf("torture: work %d must be in [0, %d]", c.Work, MaxWork)
	case c.Work == 0:
		c.Work = 32
	}
	if c.LongHold < 0 {
		return c, fmt.Errorf("torture: long hold %v is negative", c.LongHold)
	}
	switch {
	case c.LongHoldEvery < 0:
		return c, fmt.Errorf("torture: long-hold-every %d is negative", c.LongHoldEvery)
	case c.LongHoldEvery == 0:
		c.LongHoldEvery = 100000
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"stutter", c.Stutter}, {"shuffle", c.Shuffle}, {"watchdog", c.Watchdog}, {"starve-after", c.StarveAfter}, {"stall-after", c.StallAfter}} {
		if err := positive(d.name, d.v); err != nil {
			return c, err
		}
	}
	if c.Watchdog == 0 {
		c.Watchdog = max(DefaultWatchdog, 4*c.LongHold)
	}
	if c.Watchdog <= c.LongHold {
		return c, fmt.Errorf("torture: watchdog %v must exceed the long hold %v", c.Watchdog, c.LongHold)
	}
	if c.StarveAfter == 0 {
		c.StarveAfter = time.Second
	}
	if c.StallAfter == 0 {
		c.StallAfter = 5 * c.Watchdog
	}
	if c.StallAfter <= c.Watchdog {
		return c, fmt.Errorf("torture: stall-after %v must exceed the watchdog %v", c.StallAfter, c.Watchdog)
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c, nil
}

// positive accepts 0 (the default) or a duration of at least a
// millisecond; shorter periods would only measure timer overhead.
func positive(name string, d time.Duration) error {
	if d < 0 || (d > 0 && d < time.Millisecond) {
		return fmt.Errorf("torture: %s %v must be 0 (default/off) or at least 1ms", name, d)
	}
	return nil
}
