package qspin

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// hashTable maps a lock to the node of the waiter halted on it, so that
// the unlocker of a SLOW lock can kick exactly that waiter. It is the
// kernel's pv_hash: open addressing, linear probing from a cache-line
// aligned bucket over the whole table, lock-free.
//
// It never overflows. Every entry names a node whose owner waits for the
// entry's lock, and no node is named by two entries: a node is hashed
// either by the holder that made it queue head (pvKickNode, after turning
// its state from halted to hashed) or by itself as head, and a head whose
// state says hashed never hashes itself; a head hashes itself again only
// once its entry is gone (entryGone), and pvKickNode runs once per
// hand-over. The entry is removed
// before the owner can take the lock and release its node: by the unlocker,
// which unhashes before it releases a SLOW lock, or by the head itself when
// it finds the lock free instead of marking it SLOW. So at most maxNodes
// entries (one per node in use) exist at once, and the table has twice as
// many slots: a load factor of at most 0.5. Waiters without a node never
// hash. The same rules give at most one entry per lock, which is what lets
// the unlocker find the right node by the lock alone.
type hashTable struct {
	slots []hashSlot
	mask  uint32
}

// hashSlot is one entry (struct pv_hash_entry): 16 bytes, 4 per cache line.
type hashSlot struct {
	key  atomic.Uintptr // lock address; 0: free
	node atomic.Uint32  // node id + 1
	_    uint32
}

const slotsPerLine = 4

// pvHashSlots is the size of the package's table: twice the number of
// nodes that can be hashed at once.
const pvHashSlots = 2 * maxNodes

func newHashTable(size int) *hashTable {
	if size < slotsPerLine || size&(size-1) != 0 {
		panic(fmt.Sprintf("qspin: hash table size %d is not a power of two >= %d", size, slotsPerLine))
	}
	return &hashTable{slots: make([]hashSlot, size), mask: uint32(size - 1)}
}

var pvHash struct {
	once sync.Once
	t    *hashTable
}

// table returns the package's lock -> node table, allocating it (2 MiB) on
// the first PV halt.
func table() *hashTable {
	pvHash.once.Do(func() { pvHash.t = newHashTable(pvHashSlots) })
	return pvHash.t
}

// start returns the first slot to probe for key: a Fibonacci hash of the
// address, rounded down to the first slot of its cache line.
func (t *hashTable) start(key uintptr) uint32 {
	h := uint32((uint64(key) * 0x9E3779B97F4A7C15) >> 32)
	return h & t.mask &^ (slotsPerLine - 1)
}

// hash records key -> node and returns the number of slots probed. A full
// table is a broken invariant (see hashTable) and panics, as the kernel's
// BUG() does.
func (t *hashTable) hash(key uintptr, node uint32) (hops int) {
	s := t.start(key)
	for i := range t.slots {
		e := &t.slots[(s+uint32(i))&t.mask]
		if e.key.Load() == 0 && e.key.CompareAndSwap(0, key) {
			e.node.Store(node + 1)
			return i + 1
		}
	}
	panic(fmt.Sprintf("qspin: lock hash table full (%d slots): more halted waiters than queue nodes", len(t.slots)))
}

// unhash removes the entry of key and returns its node id. Only the owner
// of the SLOW lock calls it, after the hasher's Or/CAS of SLOW, which
// follows the node store. The probe covers the whole table, so entries
// removed by others never hide this one.
func (t *hashTable) unhash(key uintptr) uint32 {
	s := t.start(key)
	for i := range t.slots {
		e := &t.slots[(s+uint32(i))&t.mask]
		if e.key.Load() == key {
			n := e.node.Load()
			e.node.Store(0)
			e.key.Store(0) // last: frees the slot for the next hash
			return n - 1
		}
	}
	panic("qspin: unlock of a SLOW lock found no hash entry (lock word corrupted)")
}

// used counts occupied slots; for tests, on a quiescent table.
func (t *hashTable) used() int {
	n := 0
	for i := range t.slots {
		if t.slots[i].key.Load() != 0 {
			n++
		}
	}
	return n
}
