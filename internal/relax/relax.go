// Package relax provides the CPU-relax hint that spin loops execute between
// polls of a lock word: the x86 PAUSE instruction, or a no-op elsewhere.
//
// Pause is written in assembly on amd64 and executes a bounded number of
// PAUSEs before returning. Assembly is not asynchronously preemptible, so an
// unbounded spin written in assembly would block the garbage collector's
// stop-the-world; the loop that decides whether to keep spinning therefore
// always stays in ordinary Go code.
package relax

// MaxPause bounds the number of PAUSE instructions a single call executes.
const MaxPause = 256

// Pause executes n CPU-relax hints (at most MaxPause).
func Pause(n uint32) {
	if n > MaxPause {
		n = MaxPause
	}
	pause(n)
}
