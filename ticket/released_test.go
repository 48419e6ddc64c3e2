package ticket

import "testing"

// Slow releases are counted in a sample: the release whose new head is a
// multiple of releasedSlowSample tickets counts releasedSlowSample. A run
// of slow releases is so counted to within a sample of its length, and
// the releases outside the sample write no counter.
func TestReleasedSlowIsSampled(t *testing.T) {
	l := New(Name("released-slow-sample"))
	st := l.named.Mode(int(ModePV))
	for _, n := range []int{1, releasedSlowSample - 1, 1000} {
		before := st.Snapshot()
		head := uint32(l.word.Load())
		sampled := 0
		for i := 0; i < n; i++ {
			l.Lock()
			l.word.Or(flagBit) // as a halting waiter would: the release runs unlockSlow
			l.Unlock()
			if next := head + uint32(pvInc)*uint32(i+1); next%(releasedSlowSample*pvInc) == 0 {
				sampled++
			}
		}
		if l.word.Load()&flagBit != 0 {
			t.Fatalf("the flag is still set after %d slow releases with nobody waiting", n)
		}
		got := st.Snapshot().Sub(before).Get(ReleasedSlow)
		if want := uint64(sampled * releasedSlowSample); got != want {
			t.Errorf("%d slow releases from head %d counted %d, want %d (%d sampled)", n, head, got, want, sampled)
		}
		if d := int64(got) - int64(n); d <= -releasedSlowSample || d >= releasedSlowSample {
			t.Errorf("%d slow releases counted %d: off by a sample or more", n, got)
		}
	}
}
