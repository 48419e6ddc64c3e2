package torture

import (
	"fmt"

	"github.com/pvlock/pvlock/bench/locks"
)

// Lock is a lock kind the torture can run: a kind of the lab's one
// registry, bench/locks, which lists them (locks.TortureNames) and says
// which are unfair (Unfair) and which keep halt statistics (Stats).
type Lock = locks.Kind

// LookupLock returns the registered lock kind called name, if the
// torture can run it.
func LookupLock(name string) (Lock, error) {
	k, ok := locks.Get(name)
	if !ok {
		return Lock{}, fmt.Errorf("torture: unknown lock %q (known: %v)", name, locks.TortureNames())
	}
	if k.NoTorture != "" {
		return Lock{}, fmt.Errorf("torture: lock %s cannot be tortured: %s", name, k.NoTorture)
	}
	return k, nil
}
