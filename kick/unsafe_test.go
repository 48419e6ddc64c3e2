package kick

import "unsafe"

func unsafePtr(p *int) unsafe.Pointer { return unsafe.Pointer(p) }
