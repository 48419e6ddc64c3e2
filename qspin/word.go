package qspin

// Fields of the lock word (see the package doc).
const (
	lockedMask uint32 = 0xff   // the locked field
	lockedVal  uint32 = 1      // held (_Q_LOCKED_VAL)
	slowVal    uint32 = 3      // held, a halted waiter is hashed (_Q_SLOW_VAL)
	pendingVal uint32 = 1 << 8 // _Q_PENDING_VAL

	tailOffset               = 9
	tailMask          uint32 = 1<<32 - 1<<tailOffset
	lockedPendingMask        = lockedMask | pendingVal

	// maxTailID is the largest node id the tail field can name.
	maxTailID = tailMask>>tailOffset - 1
)

// Every node id must fit the tail: compilation fails if maxNodes grows
// beyond what the tail field can encode.
const _ = uint32(maxTailID - (maxNodes - 1))

// encodeTail returns the tail field naming node id. The id is stored plus
// one so that an empty queue (tail 0) differs from the node with id 0.
func encodeTail(id uint32) uint32 { return (id + 1) << tailOffset }

// decodeTail returns the node id named by the tail field of word v, which
// must be non-zero.
func decodeTail(v uint32) uint32 { return (v >> tailOffset) - 1 }
