package ticket

import (
	"strings"
	"testing"

	"github.com/pvlock/pvlock/pvlock"
)

// namedStats returns the statistics of the ticket locks named name in mode
// m, as pvlock.AllLockStats lists them.
func namedStats(t *testing.T, name string, m Mode) *pvlock.LockStats {
	t.Helper()
	for _, s := range pvlock.AllLockStats() {
		if s.Name() == name && s.Mode() == m.String() && s.Kind() == Stats(m).Kind() {
			return s
		}
	}
	t.Fatalf("no statistics named %q for mode %v", name, m)
	return nil
}

// TestNameCountsApart: a named lock counts in its name's statistics, of
// the mode it ends up with whatever the order of the options, and not in
// the unnamed ones; a second lock with the name shares them.
func TestNameCountsApart(t *testing.T) {
	const rounds = 4 * 2048 // several acquisition batches in either mode
	for _, c := range []struct {
		name string
		opts []Option
		mode Mode
	}{
		{"named-pv", []Option{Name("named-pv")}, ModePV},
		{"named-native", []Option{Name("named-native"), Native()}, ModeNative},
	} {
		unnamed := Stats(c.mode).Snapshot()
		a, b := New(c.opts...), New(c.opts...)
		for range rounds {
			a.Lock()
			a.Unlock()
			b.Lock()
			b.Unlock()
		}
		got := namedStats(t, c.name, c.mode).Snapshot().Events[Acquisitions]
		if got < 2*rounds-2*2048 || got > 2*rounds {
			t.Errorf("%s: named acquisitions %d after %d by two locks", c.name, got, 2*rounds)
		}
		if d := Stats(c.mode).Snapshot().Events[Acquisitions] - unnamed.Events[Acquisitions]; d != 0 {
			t.Errorf("%s: the unnamed statistics counted %d of the named locks' acquisitions", c.name, d)
		}
		if s := namedStats(t, c.name, c.mode); s.Kind() != Stats(c.mode).Kind() {
			t.Errorf("%s: kind %q, want %q", c.name, s.Kind(), Stats(c.mode).Kind())
		}
	}
}

// TestNameRejectsInvalidUTF8: a name no metric label could carry is
// refused when the option is made.
func TestNameRejectsInvalidUTF8(t *testing.T) {
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.HasPrefix(msg, "ticket: lock name") {
			t.Fatalf("Name of invalid UTF-8: recovered %v", r)
		}
	}()
	Name("bad\xff")
}
