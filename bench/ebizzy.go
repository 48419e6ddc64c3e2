package bench

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/pvlock/pvlock/pvlock"
)

// ebizzy sizes: source chunks of sorted records, copied whole into a fresh
// allocation from a page arena. 2048 records of 8 bytes are 16 KiB.
const (
	ebizzyChunks       = 16
	ebizzyChunkRecords = 2048
	ebizzyPageRecords  = 128 // 1 KiB pages
	ebizzyChunkPages   = ebizzyChunkRecords / ebizzyPageRecords
)

// ebizzy is the lab's version of ebizzy's search_mem loop. Each iteration
// (one record, as ebizzy counts them) picks a random source chunk, takes a
// fresh allocation from the shared page arena, copies the chunk into it,
// binary-searches the copy for a key drawn from the source and frees the
// allocation. The arena is the allocator behind the lock under test.
type ebizzy struct {
	lock  sync.Locker
	src   [][]uint64 // ebizzyChunks sorted chunks, read-only
	arena pageArena  // guarded by lock
	vcpus []ebizzyVCPU
}

type ebizzyVCPU struct {
	rng   *rand.Rand
	found uint64
	_     [112]byte
}

// pageArena is a first-fit page allocator: a bitmap of used pages and the
// owner of each page, so that handing out memory in use is detected.
type pageArena struct {
	mem           []uint64 // pages·ebizzyPageRecords records
	used          []uint64 // bitmap, one bit per page
	owner         []int32  // vCPU index+1 holding the page, 0 if free
	allocs, frees uint64
}

func newPageArena(pages int) pageArena {
	return pageArena{
		mem:   make([]uint64, pages*ebizzyPageRecords),
		used:  make([]uint64, (pages+63)/64),
		owner: make([]int32, pages),
	}
}

// alloc returns the first page of n free consecutive pages, marked as
// owned by who, or -1 if there is no such run.
func (a *pageArena) alloc(n int, who int32) int {
	pages := len(a.owner)
	for start := 0; start+n <= pages; {
		w := a.used[start/64] >> (start % 64)
		if w&1 != 0 {
			start += bits.TrailingZeros64(^w) // skip the used run
			continue
		}
		free := 0
		for free < n && a.used[(start+free)/64]&(1<<((start+free)%64)) == 0 {
			free++
		}
		if free == n {
			for p := start; p < start+n; p++ {
				a.used[p/64] |= 1 << (p % 64)
				a.owner[p] = who
			}
			a.allocs++
			return start
		}
		start += free
	}
	return -1
}

// free returns n pages from first, which who must own.
func (a *pageArena) free(first, n int, who int32) error {
	for p := first; p < first+n; p++ {
		if a.owner[p] != who || a.used[p/64]&(1<<(p%64)) == 0 {
			return fmt.Errorf("ebizzy: page %d freed by vCPU %d but owned by %d", p, who-1, a.owner[p]-1)
		}
		a.used[p/64] &^= 1 << (p % 64)
		a.owner[p] = 0
	}
	a.frees++
	return nil
}

func (a *pageArena) pages(first, n int) []uint64 {
	return a.mem[first*ebizzyPageRecords : (first+n)*ebizzyPageRecords]
}

func (e *ebizzy) Op(v *pvlock.VCPU) {
	me := &e.vcpus[v.Index()]
	who := int32(v.Index() + 1)
	src := e.src[me.rng.IntN(len(e.src))]

	Acquire(e.lock, v)
	first := e.arena.alloc(ebizzyChunkPages, who)
	e.lock.Unlock()
	if first < 0 {
		panic("ebizzy: arena exhausted: more allocations outstanding than vCPUs")
	}

	cp := e.arena.pages(first, ebizzyChunkPages)
	copy(cp, src)
	i := me.rng.IntN(len(src))
	if j := search(cp, src[i]); j != i {
		panic(fmt.Sprintf("ebizzy: key %d of the copy found at %d, want %d: the allocation was overwritten", src[i], j, i))
	}
	me.found++

	Acquire(e.lock, v)
	err := e.arena.free(first, ebizzyChunkPages, who)
	e.lock.Unlock()
	if err != nil {
		panic(err)
	}
}

// search is ebizzy's bsearch: the index of key in sorted xs, or -1.
func search(xs []uint64, key uint64) int {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case xs[m] < key:
			lo = m + 1
		case xs[m] > key:
			hi = m
		default:
			return m
		}
	}
	return -1
}

func (e *ebizzy) Units() uint64 {
	return sumOf(e.vcpus, func(v *ebizzyVCPU) uint64 { return v.found })
}

// Check verifies that every allocation was freed by its owner.
func (e *ebizzy) Check() error {
	a := &e.arena
	if a.allocs != a.frees {
		return fmt.Errorf("ebizzy: %d allocations but %d frees", a.allocs, a.frees)
	}
	if a.allocs != e.Units() {
		return fmt.Errorf("ebizzy: %d allocations for %d records", a.allocs, e.Units())
	}
	for p, o := range a.owner {
		if o != 0 || a.used[p/64]&(1<<(p%64)) != 0 {
			return fmt.Errorf("ebizzy: page %d still held by vCPU %d after the run", p, o-1)
		}
	}
	return nil
}

func setupEbizzy(lock sync.Locker, nvcpu int, p Params) Instance {
	e := &ebizzy{lock: lock, vcpus: make([]ebizzyVCPU, nvcpu)}
	seed := rand.New(rand.NewPCG(p.Seed, 0xeb1221))
	for c := 0; c < ebizzyChunks; c++ {
		chunk := make([]uint64, ebizzyChunkRecords)
		x := seed.Uint64N(1 << 20)
		for i := range chunk {
			x += 1 + seed.Uint64N(1<<20) // strictly increasing: keys are unique
			chunk[i] = x
		}
		e.src = append(e.src, chunk)
	}
	// One allocation per vCPU at a time, plus a spare so first fit has a
	// choice: the arena never runs out unless two vCPUs share an allocation.
	e.arena = newPageArena((nvcpu + 1) * ebizzyChunkPages)
	for i := range e.vcpus {
		e.vcpus[i].rng = rand.New(rand.NewPCG(p.Seed, uint64(i)))
	}
	return e
}

func init() {
	RegisterWorkload(Workload{
		Name: "ebizzy",
		Doc: "ebizzy's loop: each record picks a random 16 KiB chunk of sorted records, " +
			"allocates a fresh 16-page buffer from a shared first-fit page arena, copies " +
			"the chunk in, binary-searches the copy for a key and frees the buffer. The " +
			"arena is the allocator behind the lock under test, as mmap/munmap and the " +
			"page-fault path are for the real ebizzy: two short critical sections per " +
			"record between memory-bound work, so throughput follows how fast the lock " +
			"changes hands when its next owner may be descheduled.",
		Unit:  "records",
		Setup: setupEbizzy,
	})
}
