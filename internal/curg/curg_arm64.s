#include "textflag.h"

// func Pointer() uintptr
// On arm64 the runtime keeps the running goroutine's g in R28 (g), in
// assembly (ABI0) functions too.
TEXT ·Pointer(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
