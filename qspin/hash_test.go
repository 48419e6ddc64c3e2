package qspin

import (
	"sync"
	"testing"

	"github.com/pvlock/pvlock/internal/testkit"
)

// collidingKeys returns n distinct fake lock addresses that all start
// probing at slot 0 of t, the worst case for linear probing.
func collidingKeys(t *hashTable, n int) []uintptr {
	var keys []uintptr
	for k := uintptr(8); len(keys) < n; k += 8 {
		if t.start(k) == 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestHashTableFullEdge fills a table to its last slot with keys that all
// collide, checks that every entry is found again, that one more entry is
// refused loudly, and that a freed slot is reused.
func TestHashTableFullEdge(t *testing.T) {
	const size = 16
	h := newHashTable(size)
	keys := collidingKeys(h, size+1)
	for i, k := range keys[:size] {
		if hops := h.hash(k, uint32(i)); hops != i+1 {
			t.Fatalf("entry %d took %d hops, want %d (linear probing)", i, hops, i+1)
		}
	}
	if h.used() != size {
		t.Fatalf("%d slots used, want %d", h.used(), size)
	}
	testkit.MustPanic(t, "lock hash table full", func() { h.hash(keys[size], size) })

	// Remove from the middle: later entries must still be found although
	// their probe sequence now crosses a free slot.
	if got := h.unhash(keys[5]); got != 5 {
		t.Fatalf("unhash(key 5) = %d", got)
	}
	for i := size - 1; i > 5; i-- {
		if got := h.unhash(keys[i]); got != uint32(i) {
			t.Fatalf("unhash(key %d) = %d", i, got)
		}
	}
	// The freed slots are reused.
	if hops := h.hash(keys[size], 99); hops != 6 {
		t.Fatalf("re-insert took %d hops, want 6 (first free slot)", hops)
	}
	for i := 0; i < 5; i++ {
		if got := h.unhash(keys[i]); got != uint32(i) {
			t.Fatalf("unhash(key %d) = %d", i, got)
		}
	}
	if got := h.unhash(keys[size]); got != 99 {
		t.Fatalf("unhash(re-inserted) = %d", got)
	}
	if h.used() != 0 {
		t.Fatalf("%d slots still used", h.used())
	}
	testkit.MustPanic(t, "found no hash entry", func() { h.unhash(keys[0]) })
	testkit.MustPanic(t, "not a power of two", func() { newHashTable(12) })
}

// TestHashTableConcurrentFull runs as many goroutines as the table has
// slots, each hashing and unhashing its own key over and over, so the
// table is full or nearly full all the time: no insertion may fail and no
// entry may be lost or confused.
func TestHashTableConcurrentFull(t *testing.T) {
	const size = 64
	h := newHashTable(size)
	keys := collidingKeys(h, size/2)
	for k := uintptr(8); len(keys) < size; k += 8 {
		if h.start(k) != 0 {
			keys = append(keys, k)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, size)
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 500; r++ {
				h.hash(k, uint32(i))
				if got := h.unhash(k); got != uint32(i) {
					errs <- "an entry came back with another node"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if h.used() != 0 {
		t.Fatalf("%d entries left", h.used())
	}
}

// TestPVHashTableSize checks the bound that makes the package's table
// impossible to fill: at most one entry per node in use.
func TestPVHashTableSize(t *testing.T) {
	if pvHashSlots < maxNodes {
		t.Fatalf("%d hash slots for %d nodes: the table could overflow", pvHashSlots, maxNodes)
	}
	if got := len(table().slots); got != pvHashSlots {
		t.Fatalf("table has %d slots, want %d", got, pvHashSlots)
	}
}
