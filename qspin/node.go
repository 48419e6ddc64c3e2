package qspin

import (
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
)

// Node ids. Ids 0..vcpuNodes-1 are the per-vCPU nodes, indexed by the
// pvlock vCPU global id (the Slot of the vCPU's bound kick.Waiter); ids
// vcpuNodes..maxNodes-1 form the pool used by every other goroutine.
const (
	vcpuNodes  = lockcore.MaxVCPUs
	maxNodes   = 1 << 16
	chunkNodes = 64 // nodes allocated together
)

// MaxPooledWaiters (61440) is the number of goroutines that are not pinned
// vCPUs and may be queued on qspin locks at once; more concurrent waiters
// still get the lock, by spinning on a trylock without a queue node
// (counted as lock_no_node). Pinned vCPUs always have their own node.
const MaxPooledWaiters = maxNodes - vcpuNodes

// PV node states (enum vcpu_state). A queued node uses running and halted;
// the queue head uses running and hashed.
const (
	stateRunning uint32 = iota
	stateHalted         // halted in pvWaitNode
	stateHashed         // hashed under a lock: the unlocker will kick it
)

// qnode is an MCS queue node with the PV fields (struct pv_node). Every
// field other waiters touch is atomic; id never changes.
type qnode struct {
	locked   atomic.Uint32               // 1: the predecessor made us queue head
	state    atomic.Uint32               // PV state, see above
	next     atomic.Pointer[qnode]       // successor in the queue
	waiter   atomic.Pointer[kick.Waiter] // whom a kick of this node wakes
	kickTime atomic.Int64                // set by the kicker, for kick-to-wake latency
	// hashSeq numbers the entries pvKickNode makes for the node: it bumps
	// it before it hashes the node. unhashed is the largest hashSeq an
	// unlocker read after removing the node's entry (see entryGone).
	hashSeq  atomic.Uint64
	unhashed atomic.Uint64
	freeNext atomic.Uint32 // pool free list: id+1 of the next free node
	busy     atomic.Uint32 // per-vCPU nodes: in use
	id       uint32
	park     *kick.Waiter // pooled nodes: the node's own Park waiter
	_        [128 - 72]byte
}

// nodes holds every node, allocated a chunk at a time on first use and
// never freed, so a node pointer decoded from a stale tail or hash entry is
// always safe to touch.
var nodes [maxNodes / chunkNodes]atomic.Pointer[[chunkNodes]qnode]

// nodeAt returns an allocated node. The chunk of any id found in a lock's
// tail was allocated before the tail was published.
func nodeAt(id uint32) *qnode {
	return &nodes[id/chunkNodes].Load()[id%chunkNodes]
}

// ensureNode returns node id, allocating its chunk if needed.
func ensureNode(id uint32) *qnode {
	p := &nodes[id/chunkNodes]
	c := p.Load()
	if c == nil {
		fresh := new([chunkNodes]qnode)
		base := id &^ (chunkNodes - 1)
		for i := range fresh {
			fresh[i].id = base + uint32(i)
		}
		if p.CompareAndSwap(nil, fresh) {
			c = fresh
		} else {
			c = p.Load()
		}
	}
	return &c[id%chunkNodes]
}

// pool is a lock-free stack of free pooled nodes (a Treiber stack whose
// head carries a version counter against ABA) plus a bump allocator of ids
// never used yet.
var pool struct {
	head atomic.Uint64 // version<<32 | (id+1) of the top node; low half 0: empty
	used atomic.Uint32 // pooled ids handed out so far
}

// popNode returns a free pooled node, or nil if all MaxPooledWaiters are
// in use.
func popNode() *qnode {
	for {
		h := pool.head.Load()
		top := uint32(h)
		if top == 0 {
			break
		}
		n := nodeAt(top - 1)
		// n.freeNext may be stale if n was popped and pushed meanwhile;
		// the version in the head makes the CAS fail in that case.
		if pool.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(n.freeNext.Load())) {
			return n
		}
	}
	for {
		u := pool.used.Load()
		if u >= MaxPooledWaiters {
			return nil
		}
		if pool.used.CompareAndSwap(u, u+1) {
			return ensureNode(vcpuNodes + u)
		}
	}
}

// pushNode returns a pooled node to the free stack.
func pushNode(n *qnode) {
	for {
		h := pool.head.Load()
		n.freeNext.Store(uint32(h))
		if pool.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(n.id+1)) {
			return
		}
	}
}

// getNode returns a queue node for the calling goroutine and the waiter a
// kick of that node wakes: the per-vCPU node and the vCPU's futex waiter
// on a pinned vCPU thread, else a pooled node and its own Park waiter. It
// returns a nil node when the pool is exhausted.
func getNode() (*qnode, *kick.Waiter) {
	w := kick.Current()
	// Only a running vCPU's own waiter takes the node of its Slot
	// (lockcore.Of checks that the vCPU attached there has w as its
	// waiter), so a waiter bound outside pvlock, whose Slot may be any
	// vCPU's, never shares that vCPU's node: it takes a pooled one.
	if lockcore.Of(w) != nil && w.Slot < vcpuNodes {
		n := ensureNode(uint32(w.Slot))
		// Free unless the vCPU queues for a second lock while queued for
		// a first (a cross-vCPU call it serves from its spin may take a
		// lock that does not halt); then a pooled node serves instead.
		if n.busy.CompareAndSwap(0, 1) {
			n.waiter.Store(w)
			return n, w
		}
	}
	n := popNode()
	if n == nil {
		return nil, w
	}
	if w == nil {
		if n.park == nil {
			n.park = kick.NewWaiter(kick.Park)
			n.park.Slot = kick.GoroutineSlot
		}
		w = n.park
	}
	n.waiter.Store(w)
	return n, w
}

// putNode releases a node taken by getNode. Other goroutines may still
// read it (a late kick, a successor's wait-early check); that is harmless.
func putNode(n *qnode) {
	if n.id < vcpuNodes {
		n.busy.Store(0)
		return
	}
	pushNode(n)
}

// markUnhashed records, for the queue head, that its entry number seq has
// been removed. Marks only grow: a late mark of an older entry never hides
// a newer one.
func (n *qnode) markUnhashed(seq uint64) {
	for {
		old := n.unhashed.Load()
		if old >= seq || n.unhashed.CompareAndSwap(old, seq) {
			return
		}
	}
}

// entryGone reports, to the queue head that owns n, which is hashed and
// finds its lock not SLOW, whether its hash entry is gone (the unlocker
// removed it, released the lock and it was stolen since) rather than not
// yet marked (pvKickNode hashed n and has not set SLOW yet). An entry the
// head made itself keeps the lock SLOW until an unlocker removes it, so
// only pvKickNode's entries are in doubt, and pvKickNode bumps hashSeq
// before it tells n that it is hashed: a mark equals hashSeq only once
// the unlocker of that entry, or of a later one, has read it after the
// removal. A mark of an older entry makes the two differ, which only
// delays a re-hash.
func (n *qnode) entryGone() bool {
	return n.unhashed.Load() == n.hashSeq.Load()
}
