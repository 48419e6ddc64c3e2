package qspin

import (
	"sync"
	"testing"
	"time"
	"unsafe"
)

// checkTail verifies that node id round-trips through the tail field,
// whatever the locked and pending fields hold, and stays inside the tail.
func checkTail(t *testing.T, id uint32) {
	t.Helper()
	tail := encodeTail(id)
	if tail == 0 {
		t.Fatalf("node %d encodes to the empty tail", id)
	}
	if tail&^tailMask != 0 {
		t.Fatalf("node %d: tail %#x spills into locked/pending", id, tail)
	}
	for _, low := range []uint32{0, lockedVal, slowVal, pendingVal, lockedPendingMask} {
		if got := decodeTail(tail | low); got != id {
			t.Fatalf("node %d: decode(%#x) = %d", id, tail|low, got)
		}
	}
}

// TestTailEncodingAllIDs round-trips every node id through the tail and
// through the node table.
func TestTailEncodingAllIDs(t *testing.T) {
	if maxNodes-1 > maxTailID {
		t.Fatalf("maxNodes %d does not fit a tail of %d ids", maxNodes, maxTailID+1)
	}
	seen := make(map[uint32]bool, maxNodes)
	for id := uint32(0); id < maxNodes; id++ {
		checkTail(t, id)
		tail := encodeTail(id)
		if seen[tail] {
			t.Fatalf("two ids encode to tail %#x", tail)
		}
		seen[tail] = true
		n := ensureNode(id)
		if n.id != id || nodeAt(decodeTail(tail)) != n {
			t.Fatalf("node %d: table holds id %d", id, n.id)
		}
	}
	if unsafe.Sizeof(qnode{}) != 128 {
		t.Errorf("qnode is %d bytes, want 128 (own cache lines)", unsafe.Sizeof(qnode{}))
	}
}

// FuzzTailEncoding round-trips arbitrary ids of the tail's whole range
// together with arbitrary locked/pending bits.
func FuzzTailEncoding(f *testing.F) {
	for _, id := range []uint32{0, 1, vcpuNodes - 1, vcpuNodes, maxNodes - 1, maxTailID} {
		f.Add(id, uint32(0))
		f.Add(id, lockedPendingMask)
	}
	f.Fuzz(func(t *testing.T, id, low uint32) {
		id %= maxTailID + 1
		low &= lockedPendingMask
		tail := encodeTail(id)
		if tail == 0 || tail&^tailMask != 0 {
			t.Fatalf("id %d: tail %#x", id, tail)
		}
		if got := decodeTail(tail | low); got != id {
			t.Fatalf("id %d low %#x: decoded %d", id, low, got)
		}
	})
}

// TestPoolReusesNodes checks the free stack: pushed nodes come back, ids
// stay in the pooled range, and no node is handed out twice.
func TestPoolReusesNodes(t *testing.T) {
	var got []*qnode
	seen := map[*qnode]bool{}
	for i := 0; i < 100; i++ {
		n := popNode()
		if n == nil || n.id < vcpuNodes || n.id >= maxNodes || seen[n] {
			t.Fatalf("pop %d: bad node %+v", i, n)
		}
		seen[n] = true
		got = append(got, n)
	}
	usedBefore := pool.used.Load()
	for _, n := range got {
		pushNode(n)
	}
	for range got {
		if n := popNode(); !seen[n] {
			t.Fatalf("pop after push returned node %d, not a freed one", n.id)
		}
	}
	if pool.used.Load() != usedBefore {
		t.Fatal("pool allocated fresh ids while freed ones were available")
	}
	for _, n := range got {
		pushNode(n)
	}

	// Concurrent pop/push: every node is owned by one goroutine at a time.
	var owner [maxNodes]int32
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := int32(1); g <= 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n := popNode()
				mu.Lock()
				if owner[n.id] != 0 {
					mu.Unlock()
					errs <- "node handed to two goroutines"
					return
				}
				owner[n.id] = g
				mu.Unlock()
				mu.Lock()
				owner[n.id] = 0
				mu.Unlock()
				pushNode(n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	checkQuiescent(t)
}

// TestPoolExhaustion takes every pooled node, then contends from plain
// goroutines: they must still get the lock, exclusively, through the
// node-less fallback, and a vCPU keeps its own node.
func TestPoolExhaustion(t *testing.T) {
	var held []*qnode
	for n := popNode(); n != nil; n = popNode() {
		held = append(held, n)
	}
	if int(pool.used.Load()) != MaxPooledWaiters {
		t.Fatalf("pool ran dry after %d of %d nodes", pool.used.Load(), MaxPooledWaiters)
	}
	nodesHeldByTest = len(held)
	defer func() {
		nodesHeldByTest = 0
		for _, n := range held {
			pushNode(n)
		}
		checkQuiescent(t)
	}()
	for _, v := range variants() {
		if v.mode == ModeTAS {
			continue // no queue nodes at all
		}
		t.Run(v.name, func(t *testing.T) {
			l := New(append(v.opts, NoRestriction())...) // queued waiters, not passive ones
			before := Stats(v.mode).Snapshot()
			// Waiters that arrive while the lock is held must take the
			// node-less path (native: all but the pending one).
			l.Lock()
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.Lock()
					l.Unlock()
				}()
			}
			time.Sleep(50 * time.Millisecond)
			l.Unlock()
			wg.Wait()
			d := Stats(v.mode).Snapshot().Sub(before)
			if d.Get(LockNoNode) == 0 || d.Get(LockSlowpath) != 0 {
				t.Errorf("lock_no_node %d, lock_slowpath %d; want > 0 and 0",
					d.Get(LockNoNode), d.Get(LockSlowpath))
			}
			r := stressGoroutines(t, l, 4, 1000)
			if r.delta.Get(LockSlowpath) != 0 {
				t.Errorf("%d queued acquisitions without a free node", r.delta.Get(LockSlowpath))
			}
		})
	}
}
