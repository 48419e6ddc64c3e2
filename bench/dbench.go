package bench

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/pvlock/pvlock/pvlock"
)

// dbench sizes: each client (vCPU) keeps at most dbenchFiles files of
// dbenchWords data words in the shared table.
const (
	dbenchFiles = 32
	dbenchWords = 32
)

// The dbench operations and their share of the mix, in percent. The mix
// follows the shape of dbench's client load: mostly lookups and stats,
// then writes, a few namespace changes and the occasional directory scan.
const (
	dbOpen = iota
	dbStat
	dbWrite
	dbRename
	dbUnlink
	dbFind
	dbOps
)

var dbenchMix = [dbOps]int{dbOpen: 25, dbStat: 35, dbWrite: 20, dbRename: 8, dbUnlink: 8, dbFind: 4}

var dbenchOpNames = [dbOps]string{"open", "stat", "write", "rename", "unlink", "find"}

// dbench is a metadata-heavy mix on one hash table of files, the whole
// table behind the lock under test (as a global dcache or namespace lock
// would be). Every client works on its own files, so the table's expected
// contents are known and checked; the lock is what keeps the shared
// chains, free list and counters consistent.
type dbench struct {
	lock  sync.Locker
	tab   fileTable // guarded by lock
	vcpus []dbenchVCPU
	mix   [100]uint8 // percent -> operation
}

type dbenchVCPU struct {
	rng   *rand.Rand
	names []uint64 // the client's live files, as it believes them to be
	next  uint64   // the client's next fresh name
	ops   [dbOps]uint64
	seen  uint64 // sizes summed by find, so that its scan is not dead code
	_     [64]byte
}

// fileTable is a chained hash table of files in preallocated arrays: no
// allocation after setup.
type fileTable struct {
	buckets []int32 // head of each chain, -1 if empty
	files   []file
	free    int32 // head of the free list (linked through next), -1 if none
	live    int
}

type file struct {
	name    uint64
	next    int32
	size    uint32
	version uint32
	sum     uint64 // checksum of data[:size]
	data    [dbenchWords]uint64
}

func newFileTable(capacity int) fileTable {
	nb := 1
	for nb < capacity {
		nb <<= 1
	}
	t := fileTable{buckets: make([]int32, nb), files: make([]file, capacity), free: -1}
	for i := range t.buckets {
		t.buckets[i] = -1
	}
	for i := capacity - 1; i >= 0; i-- {
		t.files[i].next = t.free
		t.free = int32(i)
	}
	return t
}

func (t *fileTable) bucket(name uint64) int {
	return int(splitmix(name) & uint64(len(t.buckets)-1))
}

// lookup returns the index of the named file, or -1.
func (t *fileTable) lookup(name uint64) int32 {
	for i := t.buckets[t.bucket(name)]; i >= 0; i = t.files[i].next {
		if t.files[i].name == name {
			return i
		}
	}
	return -1
}

// create adds an empty file; the name must be new.
func (t *fileTable) create(name uint64) (int32, error) {
	if t.lookup(name) >= 0 {
		return -1, fmt.Errorf("dbench: create of existing file %#x", name)
	}
	i := t.free
	if i < 0 {
		return -1, fmt.Errorf("dbench: file table full (%d files)", len(t.files))
	}
	f := &t.files[i]
	t.free = f.next
	b := t.bucket(name)
	*f = file{name: name, next: t.buckets[b]}
	t.buckets[b] = i
	t.live++
	return i, nil
}

// remove unlinks the named file from its chain and returns its slot,
// still holding the file, or -1 if there is no such file.
func (t *fileTable) remove(name uint64) int32 {
	b := t.bucket(name)
	for p := &t.buckets[b]; *p >= 0; p = &t.files[*p].next {
		if i := *p; t.files[i].name == name {
			*p = t.files[i].next
			t.live--
			return i
		}
	}
	return -1
}

func (t *fileTable) release(i int32) {
	t.files[i] = file{next: t.free}
	t.free = i
}

func checksum(data []uint64) uint64 {
	s := uint64(len(data))
	for _, d := range data {
		s = splitmix(s ^ d)
	}
	return s
}

func (d *dbench) Op(v *pvlock.VCPU) {
	c := &d.vcpus[v.Index()]
	op := int(d.mix[c.rng.IntN(100)])
	if len(c.names) == 0 && op != dbFind {
		op = dbOpen // nothing to work on yet: create
	}
	if op == dbOpen && len(c.names) == dbenchFiles {
		op = dbStat
	}
	var err error
	switch op {
	case dbOpen:
		err = d.open(v, c)
	case dbStat:
		err = d.stat(v, c)
	case dbWrite:
		err = d.write(v, c)
	case dbRename:
		err = d.rename(v, c)
	case dbUnlink:
		err = d.unlink(v, c)
	case dbFind:
		d.find(v, c)
	}
	if err != nil {
		panic(fmt.Errorf("vCPU %d %s: %w", v.Index(), dbenchOpNames[op], err))
	}
	c.ops[op]++
}

// freshName returns a name of this client nobody has used.
func (c *dbenchVCPU) freshName(v *pvlock.VCPU) uint64 {
	c.next++
	return uint64(v.Index())<<40 | c.next
}

func (c *dbenchVCPU) pick() int { return c.rng.IntN(len(c.names)) }

// open creates a new file (NTCreateX of a new name) or opens an existing
// one: a lookup.
func (d *dbench) open(v *pvlock.VCPU, c *dbenchVCPU) error {
	if len(c.names) > 0 && c.rng.IntN(2) == 0 {
		name := c.names[c.pick()]
		Acquire(d.lock, v)
		i := d.tab.lookup(name)
		d.lock.Unlock()
		if i < 0 {
			return fmt.Errorf("file %#x vanished", name)
		}
		return nil
	}
	name := c.freshName(v)
	Acquire(d.lock, v)
	_, err := d.tab.create(name)
	d.lock.Unlock()
	if err == nil {
		c.names = append(c.names, name)
	}
	return err
}

// stat looks a file up and reads its attributes: the shortest section.
func (d *dbench) stat(v *pvlock.VCPU, c *dbenchVCPU) error {
	name := c.names[c.pick()]
	Acquire(d.lock, v)
	i := d.tab.lookup(name)
	ok := i >= 0 && d.tab.files[i].size <= dbenchWords
	d.lock.Unlock()
	if !ok {
		return fmt.Errorf("file %#x vanished or has a bad size", name)
	}
	return nil
}

// write stores 1..dbenchWords words at the start of a file and updates its
// size, version and checksum: the longest common section, and a variable
// one.
func (d *dbench) write(v *pvlock.VCPU, c *dbenchVCPU) error {
	name := c.names[c.pick()]
	n := 1 + c.rng.IntN(dbenchWords)
	val := c.rng.Uint64()
	Acquire(d.lock, v)
	i := d.tab.lookup(name)
	if i < 0 {
		d.lock.Unlock()
		return fmt.Errorf("file %#x vanished", name)
	}
	f := &d.tab.files[i]
	if f.sum != checksum(f.data[:f.size]) {
		d.lock.Unlock()
		return fmt.Errorf("file %#x has a bad checksum", name)
	}
	for w := 0; w < n; w++ {
		f.data[w] = val + uint64(w)
	}
	f.size = max(f.size, uint32(n))
	f.version++
	f.sum = checksum(f.data[:f.size])
	d.lock.Unlock()
	return nil
}

// rename moves a file to a fresh name: unlink from one chain, link into
// another, in one critical section.
func (d *dbench) rename(v *pvlock.VCPU, c *dbenchVCPU) error {
	k := c.pick()
	old, name := c.names[k], c.freshName(v)
	Acquire(d.lock, v)
	i := d.tab.remove(old)
	if i >= 0 {
		b := d.tab.bucket(name)
		d.tab.files[i].name, d.tab.files[i].next = name, d.tab.buckets[b]
		d.tab.buckets[b] = i
		d.tab.live++
	}
	d.lock.Unlock()
	if i < 0 {
		return fmt.Errorf("file %#x vanished", old)
	}
	c.names[k] = name
	return nil
}

// unlink deletes a file.
func (d *dbench) unlink(v *pvlock.VCPU, c *dbenchVCPU) error {
	k := c.pick()
	name := c.names[k]
	Acquire(d.lock, v)
	i := d.tab.remove(name)
	if i >= 0 {
		d.tab.release(i)
	}
	d.lock.Unlock()
	if i < 0 {
		return fmt.Errorf("file %#x vanished", name)
	}
	last := len(c.names) - 1
	c.names[k], c.names = c.names[last], c.names[:last]
	return nil
}

// find scans eight chains, as a directory listing would: a long and rare
// section.
func (d *dbench) find(v *pvlock.VCPU, c *dbenchVCPU) {
	start := c.rng.IntN(len(d.tab.buckets))
	Acquire(d.lock, v)
	var sum uint64
	for b := 0; b < 8; b++ {
		for i := d.tab.buckets[(start+b)%len(d.tab.buckets)]; i >= 0; i = d.tab.files[i].next {
			sum += uint64(d.tab.files[i].size)
		}
	}
	d.lock.Unlock()
	c.seen += sum
}

// Check verifies the table against the clients' own lists: every chain
// holds only files that hash to it, the files are exactly the clients'
// live ones with valid checksums, and live plus free slots are all slots.
func (d *dbench) Check() error {
	t := &d.tab
	want := map[uint64]bool{}
	for _, c := range d.vcpus {
		for _, n := range c.names {
			want[n] = true
		}
	}
	seen := 0
	for b, head := range t.buckets {
		for i := head; i >= 0; i = t.files[i].next {
			f := &t.files[i]
			if seen++; seen > len(t.files) {
				return fmt.Errorf("dbench: chain %d loops", b)
			}
			if t.bucket(f.name) != b {
				return fmt.Errorf("dbench: file %#x is in chain %d, hashes to %d", f.name, b, t.bucket(f.name))
			}
			if !want[f.name] {
				return fmt.Errorf("dbench: file %#x is in the table but no client has it", f.name)
			}
			delete(want, f.name)
			if f.size > dbenchWords || f.sum != checksum(f.data[:f.size]) {
				return fmt.Errorf("dbench: file %#x has a bad size or checksum", f.name)
			}
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("dbench: %d files of the clients are missing from the table", len(want))
	}
	if seen != t.live {
		return fmt.Errorf("dbench: %d files in the chains, live count says %d", seen, t.live)
	}
	nfree := 0
	for i := t.free; i >= 0; i = t.files[i].next {
		if nfree++; nfree > len(t.files) {
			return fmt.Errorf("dbench: free list loops")
		}
	}
	if seen+nfree != len(t.files) {
		return fmt.Errorf("dbench: %d live + %d free != %d slots", seen, nfree, len(t.files))
	}
	return nil
}

func setupDbench(lock sync.Locker, nvcpu int, p Params) Instance {
	d := &dbench{lock: lock, tab: newFileTable(nvcpu * dbenchFiles), vcpus: make([]dbenchVCPU, nvcpu)}
	k := 0
	for op, pct := range dbenchMix {
		for j := 0; j < pct; j++ {
			d.mix[k] = uint8(op)
			k++
		}
	}
	for i := range d.vcpus {
		d.vcpus[i].rng = rand.New(rand.NewPCG(p.Seed, uint64(i)))
		d.vcpus[i].names = make([]uint64, 0, dbenchFiles)
	}
	return d
}

func init() {
	RegisterWorkload(Workload{
		Name: "dbench",
		Doc: "A metadata-heavy file-server mix in the spirit of dbench: each client " +
			"(vCPU) opens, creates, stats, writes, renames and unlinks its own files " +
			"and now and then lists a directory, all in one chained hash table of files " +
			"behind the lock under test. The critical sections are of mixed length, " +
			"from a one-chain lookup to a checksummed write of up to 32 words and an " +
			"eight-chain scan, so a preempted holder or waiter costs a varying amount; " +
			"afterwards the table is checked against every client's own list of files.",
		Unit:  "ops",
		Setup: setupDbench,
	})
}
