package kick

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// Table maps keys to published waiters so that a kicker can find exactly
// the waiter it must wake. A key is a (lock address, tag) pair: the ticket
// lock uses the awaited ticket as tag, the queued lock hashes its queue
// head under tag 0. At most one waiter should be published per key; if
// several are, Kick wakes the earliest published.
//
// The table is an array of buckets, each a short doubly-linked list under
// its own mutex, so it never fills up and never drops an entry. Bucket
// critical sections are a few list operations plus, for Kick, the wake-up
// itself; a waiter is kicked only while it is published, so a withdrawn
// waiter can never receive a stale token.
type Table struct {
	buckets [tableBuckets]bucket
}

const tableBuckets = 1024

type bucket struct {
	mu    sync.Mutex
	first *Waiter
	_     [64 - 16]byte
	_     cpu.CacheLinePad
}

func hashKey(key uintptr, tag uint64) uint32 {
	h := uint64(key)>>3 ^ tag*0x9E3779B97F4A7C15
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return uint32(h) % tableBuckets
}

// Publish makes w findable under (key, tag). w must not be published
// elsewhere. The bucket lock's release orders the publication before any
// later Kick that locks the same bucket.
func (t *Table) Publish(w *Waiter, key uintptr, tag uint64) {
	b := &t.buckets[hashKey(key, tag)]
	b.mu.Lock()
	w.key, w.tag, w.bucket = key, tag, b
	w.prev = nil
	w.next = b.first
	if b.first != nil {
		b.first.prev = w
	}
	b.first = w
	b.mu.Unlock()
}

// Withdraw removes w from the table. Withdrawing an unpublished waiter is a
// no-op.
func (t *Table) Withdraw(w *Waiter) {
	b := w.bucket
	if b == nil {
		return
	}
	b.mu.Lock()
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.first = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.next, w.prev, w.bucket = nil, nil, nil
	b.mu.Unlock()
}

// Kick kicks the waiter published under (key, tag), if any. found reports
// whether one was published; hops is the number of list entries examined.
func (t *Table) Kick(key uintptr, tag uint64) (found bool, hops int) {
	w, _, hops := t.KickWaiter(key, tag)
	return w != nil, hops
}

// KickWaiter is Kick that returns the waiter it kicked (nil if none was
// published) and whether that waiter was asleep, so that its wake-up is
// still under way when KickWaiter returns (a waiter that was polling, or
// had not halted yet, runs already).
func (t *Table) KickWaiter(key uintptr, tag uint64) (kicked *Waiter, asleep bool, hops int) {
	b := &t.buckets[hashKey(key, tag)]
	b.mu.Lock()
	match, hops := b.find(key, tag)
	if match != nil {
		_, asleep = match.kick()
	}
	b.mu.Unlock()
	return match, asleep, hops
}

// find returns the waiter that b holds under (key, tag), the earliest
// published if several are, and the number of entries it examined. The
// caller holds b.mu.
func (b *bucket) find(key uintptr, tag uint64) (match *Waiter, hops int) {
	for w := b.first; w != nil; w = w.next {
		hops++
		if w.key == key && w.tag == tag {
			match = w // keep going: the earliest published is last
		}
	}
	return match, hops
}

// Sleeper returns the domain of the waiter published under (key, tag) if
// that waiter is asleep in its halt (not polling, not yet halted, not
// kicked), and nil otherwise or if nobody is published there. The answer
// may be stale by the time it returns: it is a hint for a policy, such as
// whether a kick would wake a thread that has to wait for its kicker's
// CPU, never for a protocol.
func (t *Table) Sleeper(key uintptr, tag uint64) *Domain {
	b := &t.buckets[hashKey(key, tag)]
	b.mu.Lock()
	defer b.mu.Unlock()
	match, _ := b.find(key, tag) // the one KickWaiter would kick
	if match == nil || atomic.LoadUint32(&match.state) != stateSleeping {
		return nil
	}
	return match.domain.Load()
}

// Lookup reports whether a waiter is published under (key, tag).
func (t *Table) Lookup(key uintptr, tag uint64) bool {
	b := &t.buckets[hashKey(key, tag)]
	b.mu.Lock()
	defer b.mu.Unlock()
	for w := b.first; w != nil; w = w.next {
		if w.key == key && w.tag == tag {
			return true
		}
	}
	return false
}
