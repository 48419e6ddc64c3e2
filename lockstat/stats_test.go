package lockstat

import "testing"

// TestStats checks one kind's statistics end to end: New returns the same
// Stats for the same kind and mode, panics on other events, and counts in
// vCPU slots and stripes alike show in Snapshot until Reset.
func TestStats(t *testing.T) {
	c := New("test", "pv", []string{"a", "b"})
	if New("test", "pv", []string{"a", "b"}) != c {
		t.Fatal("same kind and mode gave a second Stats")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("redefinition with other events did not panic")
			}
		}()
		New("test", "pv", []string{"c"})
	}()
	c.Add(0, 0, 5)
	c.Inc(Slots-1, 1)
	c.Inc(-1, 1)
	c.ObserveBlocked(3, 1000)
	s := c
	snap := s.Snapshot()
	if snap.Get("a") != 5 || snap.Get("b") != 2 || snap.BlockedNanos != 1000 || snap.Blocked[HistBucket(1000)] != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	s.Reset()
	if snap := s.Snapshot(); snap.Get("a") != 0 || snap.BlockedNanos != 0 {
		t.Fatalf("after Reset: %+v", snap)
	}
	if HistBucket(0) != 0 || HistBucket(1) != 1 || HistBucket(1<<62) != HistBuckets-1 {
		t.Fatal("HistBucket boundaries")
	}
}

// TestDocumentedConstants pins the values the docs state.
func TestDocumentedConstants(t *testing.T) {
	if HistBuckets != 32 || MaxLockNames != 64 || Slots != 4096 {
		t.Fatalf("HistBuckets %d, MaxLockNames %d, Slots %d", HistBuckets, MaxLockNames, Slots)
	}
}
