package bench

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/pvlock"
)

// hackbench sizes.
const (
	// hbGroup is the number of vCPUs in a group: alternately senders and
	// receivers, so two of each (a smaller last group: 3 = S R S, 1 = a
	// vCPU that sends to itself).
	hbGroup = 4
	// hbQueueLen is the capacity of a receiver's queue, in messages.
	hbQueueLen = 64
	// hbWords is the message body: 96 bytes, about hackbench's 100.
	hbWords = 12
	// hbPolls is how many times an idle receiver (or a sender facing
	// full queues) polls before it halts, and hbHalt bounds the halt, so
	// that it notices the end of the run even if nothing ever changes.
	hbPolls = 256
	hbHalt  = 1_000_000 // ns (a time.Duration): 1ms
)

// hackbench is hackbench's groups of senders and receivers, with the
// pipes replaced by bounded message queues, each behind its own lock of
// the kind under test. A sender writes messages round-robin to the
// receivers of its group; a receiver reads its queue in order and checks
// every message (sender, sequence number, body).
//
// Nobody ever waits while holding a lock, and nobody waits long: a
// receiver with an empty queue, or a sender whose group's queues are all
// full, polls without the lock, then halts for at most hbHalt (a sender
// kicks the reader after a delivery, a receiver kicks blocked writers
// after it makes room, like a pipe's wake-ups), and returns to its caller
// either way. So the run ends at any overcommit, and idle time is not
// spent spinning. These halts use the vCPUs' own extra waiters, so the
// reported halts and kicks stay those of the lock.
type hackbench struct {
	vcpus  []hbVCPU
	queues []*hbQueue // indexed by receiver vCPU; nil for pure senders
}

type hbMsg struct {
	from, seq uint32
	body      [hbWords]uint64
}

type hbQueue struct {
	lock sync.Locker
	// Guarded by lock.
	head, n int
	msgs    [hbQueueLen]hbMsg

	// count mirrors n for the lock-free peeks of waiting readers and
	// writers.
	count atomic.Int32
	// reader is the receiver's waiter while it waits for a message;
	// writers[s] the waiter of the group's sender s while it waits for
	// room.
	reader  atomic.Pointer[kick.Waiter]
	writers [hbGroup / 2]atomic.Pointer[kick.Waiter]
}

type hbVCPU struct {
	send, recv bool
	slot       int          // sender's index among its group's senders
	peers      []int        // receivers of the group (senders)
	next       int          // round-robin position among peers
	sent       []uint32     // messages sent to each vCPU (senders)
	expect     []uint32     // next sequence number from each vCPU (receivers)
	received   uint64       // messages read during the run
	drained    uint64       // messages read by Check after the run
	waiter     *kick.Waiter // for bounded waits for a message or for room
	_          [64]byte
}

// body returns word w of message seq from sender: the receiver recomputes
// it to detect torn or mixed-up messages.
func hbBody(from, seq uint32, w int) uint64 {
	return splitmix(uint64(from)<<32|uint64(seq)) + uint64(w)
}

func (h *hackbench) Op(v *pvlock.VCPU) {
	me := &h.vcpus[v.Index()]
	if me.send {
		h.sendOne(v, me)
	}
	if me.recv {
		if err := h.receive(v, me); err != nil {
			panic(err)
		}
	}
}

// sendOne delivers one message to the next receiver with room. If the
// whole group is full it waits, a bounded time, for a receiver to make
// room, as a writer blocks on a full pipe.
func (h *hackbench) sendOne(v *pvlock.VCPU, me *hbVCPU) {
	if h.trySend(v, me) {
		return
	}
	if !me.recv { // a vCPU that also receives makes room itself, next
		h.awaitRoom(me)
	}
}

func (h *hackbench) trySend(v *pvlock.VCPU, me *hbVCPU) bool {
	from := uint32(v.Index())
	for try := 0; try < len(me.peers); try++ {
		to := me.peers[me.next]
		me.next = (me.next + 1) % len(me.peers)
		q := h.queues[to]
		seq := me.sent[to]
		Acquire(q.lock, v)
		if q.n == hbQueueLen {
			q.lock.Unlock()
			continue
		}
		m := &q.msgs[(q.head+q.n)%hbQueueLen]
		m.from, m.seq = from, seq
		for w := range m.body {
			m.body[w] = hbBody(from, seq, w)
		}
		q.n++
		// Increment, then look for a sleeping reader; the reader publishes
		// itself, then re-reads the count. With both steps sequentially
		// consistent, either it sees the message or we see it and kick.
		q.count.Add(1)
		q.lock.Unlock()
		me.sent[to]++
		if w := q.reader.Load(); w != nil {
			w.Kick()
		}
		return true
	}
	return false
}

// roomAny reports whether a queue of the sender's group has room.
func (h *hackbench) roomAny(me *hbVCPU) bool {
	for _, to := range me.peers {
		if h.queues[to].count.Load() < hbQueueLen {
			return true
		}
	}
	return false
}

// awaitRoom waits until a queue of the group has room or the bounded wait
// ends.
func (h *hackbench) awaitRoom(me *hbVCPU) {
	for i := 0; i < hbPolls; i++ {
		if h.roomAny(me) {
			return
		}
		relax.Pause(1)
	}
	w := me.waiter
	w.Arm() // before publishing: see await
	for _, to := range me.peers {
		h.queues[to].writers[me.slot].Store(w)
	}
	// Re-check after publishing, against the reader's decrement-then-look.
	if !h.roomAny(me) {
		w.Halt(hbHalt)
	}
	for _, to := range me.peers {
		h.queues[to].writers[me.slot].Store(nil)
	}
}

// receive reads one message from the vCPU's queue, waiting a bounded time
// for one to arrive.
func (h *hackbench) receive(v *pvlock.VCPU, me *hbVCPU) error {
	q := h.queues[v.Index()]
	if q.count.Load() == 0 && !h.await(q, me) {
		return nil
	}
	Acquire(q.lock, v)
	if q.n == 0 {
		q.lock.Unlock()
		return fmt.Errorf("hackbench: vCPU %d: queue count says %d messages, queue holds none", v.Index(), q.count.Load())
	}
	m := q.msgs[q.head]
	q.head = (q.head + 1) % hbQueueLen
	q.n--
	q.count.Add(-1) // then look for blocked writers: see awaitRoom
	q.lock.Unlock()
	for i := range q.writers {
		if w := q.writers[i].Load(); w != nil {
			w.Kick()
		}
	}
	if err := me.accept(&m, v.Index()); err != nil {
		return err
	}
	me.received++
	return nil
}

// await waits until q has a message or the bounded wait ends, and reports
// whether a message is there.
func (h *hackbench) await(q *hbQueue, me *hbVCPU) bool {
	for i := 0; i < hbPolls; i++ {
		if q.count.Load() > 0 {
			return true
		}
		relax.Pause(1)
	}
	w := me.waiter
	// Arm before publishing, so that a kick that follows the publication
	// cannot be erased; a stale token from an earlier wait is cleared.
	w.Arm()
	q.reader.Store(w)
	// Re-check after publishing: a sender that incremented the count
	// before our Store is seen here; one after it sees us and kicks.
	if q.count.Load() == 0 {
		w.Halt(hbHalt)
	}
	q.reader.Store(nil)
	return q.count.Load() > 0
}

// accept checks a message read by receiver to.
func (me *hbVCPU) accept(m *hbMsg, to int) error {
	if int(m.from) >= len(me.expect) || m.seq != me.expect[m.from] {
		return fmt.Errorf("hackbench: vCPU %d got message %d from vCPU %d out of order", to, m.seq, m.from)
	}
	for w, b := range m.body {
		if b != hbBody(m.from, m.seq, w) {
			return fmt.Errorf("hackbench: vCPU %d got a torn message %d from vCPU %d", to, m.seq, m.from)
		}
	}
	me.expect[m.from]++
	return nil
}

// Units is the messages received during the run.
func (h *hackbench) Units() uint64 {
	return sumOf(h.vcpus, func(v *hbVCPU) uint64 { return v.received })
}

// Check drains the queues, checking every message left in them, and then
// verifies that every message sent was delivered exactly once, in order.
func (h *hackbench) Check() error {
	for to, q := range h.queues {
		if q == nil {
			continue
		}
		me := &h.vcpus[to]
		if int(q.count.Load()) != q.n {
			return fmt.Errorf("hackbench: queue of vCPU %d holds %d messages, count says %d", to, q.n, q.count.Load())
		}
		for ; q.n > 0; q.n-- {
			m := q.msgs[q.head]
			q.head = (q.head + 1) % hbQueueLen
			if err := me.accept(&m, to); err != nil {
				return err
			}
			me.drained++
		}
		q.count.Store(0)
	}
	for from := range h.vcpus {
		for to := range h.vcpus {
			var got uint32
			if h.vcpus[to].recv {
				got = h.vcpus[to].expect[from]
			}
			if sent := h.sentTo(from, to); sent != got {
				return fmt.Errorf("hackbench: vCPU %d sent %d messages to vCPU %d, %d arrived", from, sent, to, got)
			}
		}
	}
	return nil
}

func (h *hackbench) sentTo(from, to int) uint32 {
	if !h.vcpus[from].send {
		return 0
	}
	return h.vcpus[from].sent[to]
}

// delivered returns the messages sent and the messages delivered (during
// the run or drained by Check).
func (h *hackbench) delivered() (sent, delivered uint64) {
	for i := range h.vcpus {
		me := &h.vcpus[i]
		for _, s := range me.sent {
			sent += uint64(s)
		}
		delivered += me.received + me.drained
	}
	return sent, delivered
}

func setupHackbench(lock sync.Locker, nvcpu int, p Params) Instance {
	newLock := p.NewLock
	first := true
	lockFor := func() sync.Locker {
		if first || newLock == nil {
			first = false
			return lock
		}
		return newLock()
	}
	h := &hackbench{vcpus: make([]hbVCPU, nvcpu), queues: make([]*hbQueue, nvcpu)}
	for g := 0; g < nvcpu; g += hbGroup {
		end := min(g+hbGroup, nvcpu)
		var recvs []int
		for i := g; i < end; i++ {
			me := &h.vcpus[i]
			me.send = (i-g)%2 == 0
			me.recv = (i-g)%2 == 1 || end-g == 1
			me.slot = (i - g) / 2
			me.waiter = kick.NewWaiter(kick.Futex)
			if me.recv {
				recvs = append(recvs, i)
				me.expect = make([]uint32, nvcpu)
				h.queues[i] = &hbQueue{lock: lockFor()}
			}
		}
		for i := g; i < end; i++ {
			if me := &h.vcpus[i]; me.send {
				me.peers = recvs
				me.next = me.slot % len(recvs) // spread the senders' first targets
				me.sent = make([]uint32, nvcpu)
			}
		}
	}
	return h
}

func init() {
	RegisterWorkload(Workload{
		Name: "hackbench",
		Doc: "hackbench's groups of senders and receivers, with pipes replaced by " +
			"bounded queues of 96-byte messages, each queue behind its own lock of the " +
			"kind under test. Groups of four vCPUs (two senders, two receivers); senders " +
			"write round-robin to their group's receivers, receivers read and verify in " +
			"order and, when idle, halt briefly until a sender kicks them. Many short " +
			"critical sections on several locks, with a producer/consumer hand-off " +
			"between them: a preempted queue-lock holder stalls a whole group.",
		Unit:  "messages",
		Setup: setupHackbench,
	})
}
