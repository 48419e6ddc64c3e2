#include "textflag.h"

// func pause(n uint32)
TEXT ·pause(SB), NOSPLIT, $0-4
	MOVL	n+0(FP), AX
	TESTL	AX, AX
	JZ	done
loop:
	PAUSE
	DECL	AX
	JNZ	loop
done:
	RET
