package lockstat

import (
	"fmt"
	"testing"
)

// TestNameStats: a name of a kind has one Stats per mode of its own, apart
// from the unnamed ones and shared by every lock with the name; the names
// of a kind are bounded, and a lock named beyond the bound counts with the
// unnamed locks and as an overflow.
func TestNameStats(t *testing.T) {
	events := []string{"a", "b"}
	base := []*Stats{New("nametest", "pv", events), New("nametest", "native", events)}
	if NameStats(base, "") != nil {
		t.Fatal("the empty name has statistics of its own")
	}
	orders := NameStats(base, "orders")
	if orders == nil {
		t.Fatal("no statistics for the first name")
	}
	if again := NameStats(base, "orders"); again != orders {
		t.Fatal("a second lock with the same name got other statistics")
	}
	for m, b := range base {
		s := orders.Mode(m)
		if s == b || s.Kind() != b.Kind() || s.Mode() != b.Mode() || s.Name() != "orders" {
			t.Fatalf("mode %d: named %s/%s %q, unnamed %s/%s %q", m, s.Kind(), s.Mode(), s.Name(), b.Kind(), b.Mode(), b.Name())
		}
	}
	orders.Mode(1).Inc(-1, 1)
	if got := orders.Mode(1).Sum()[1]; got != 1 {
		t.Fatalf("named native b = %d, want 1", got)
	}
	if got := base[1].Sum()[1]; got != 0 {
		t.Fatalf("the named lock's count reached the unnamed statistics: %d", got)
	}
	found := 0
	for _, s := range All() {
		if s.Kind() == "nametest" && s.Name() == "orders" {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("All lists %d named nametest statistics, want 2 (one per mode)", found)
	}

	// Another kind's names do not count against this kind's bound.
	other := []*Stats{New("nametest-other", "pv", events)}
	if NameStats(other, "orders") == nil {
		t.Fatal("a name of another kind was refused")
	}
	for i := 1; i < MaxLockNames; i++ {
		if NameStats(base, fmt.Sprintf("name%d", i)) == nil {
			t.Fatalf("name %d of %d refused", i+1, MaxLockNames)
		}
	}
	before := NameOverflows()
	if n := NameStats(base, "one-too-many"); n != nil {
		t.Fatalf("name %d accepted beyond MaxLockNames", MaxLockNames+1)
	}
	if got := NameOverflows() - before; got != 1 {
		t.Fatalf("overflows went up by %d, want 1", got)
	}
	if NameStats(base, "orders") != orders {
		t.Fatal("an existing name was refused once the bound was reached")
	}
}
