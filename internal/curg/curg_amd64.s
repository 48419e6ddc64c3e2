#include "textflag.h"

// func Pointer() uintptr
TEXT ·Pointer(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
