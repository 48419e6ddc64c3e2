package curg

import (
	"runtime"
	"sync"
	"testing"
)

func TestPointerPerGoroutine(t *testing.T) {
	if !Supported {
		if Pointer() != 0 {
			t.Fatal("unsupported platform returned a pointer")
		}
		return
	}
	self := Pointer()
	if self == 0 {
		t.Fatal("Pointer returned 0")
	}
	runtime.Gosched()
	if Pointer() != self {
		t.Fatal("Pointer changed within one goroutine")
	}
	const n = 64
	ptrs := make([]uintptr, n)
	var wg, stored sync.WaitGroup
	hold := make(chan struct{})
	for i := range ptrs {
		wg.Add(1)
		stored.Add(1)
		go func() {
			defer wg.Done()
			ptrs[i] = Pointer()
			stored.Done()
			<-hold // stay alive, so that no address is reused
			if Pointer() != ptrs[i] {
				t.Error("Pointer changed within one goroutine")
			}
		}()
	}
	stored.Wait()
	close(hold)
	wg.Wait()
	seen := map[uintptr]bool{self: true}
	for _, p := range ptrs {
		if p == 0 || seen[p] {
			t.Fatalf("goroutines alive at once share the address %#x", p)
		}
		seen[p] = true
	}
}

func BenchmarkPointer(b *testing.B) {
	for b.Loop() {
		Pointer()
	}
}
