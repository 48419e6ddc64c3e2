package relax

//go:noescape
func pause(n uint32)
