//go:build !amd64

package relax

var sink uint32

// pause has no CPU hint to use on this architecture; it burns a few cycles
// so that spin loops still poll at a similar rate.
func pause(n uint32) {
	for i := uint32(0); i < n; i++ {
		sink++
	}
}
