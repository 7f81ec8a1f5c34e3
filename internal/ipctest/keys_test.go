package ipctest

import (
	"os"
	"testing"
)

func TestKeysStepByTwoInTheirBand(t *testing.T) {
	k := NewKeys(0x3000, 64, 0x100, 0xa000)
	high := uint32(0x3000 + os.Getpid()%64*0x100)
	a, b := k.Next(), k.Next()
	if a != high<<16|0xa000 || b != a+2 {
		t.Fatalf("keys %#x, %#x: want %#x then +2", a, b, high<<16|0xa000)
	}
	if got := k.Used(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Used() = %#x, want [%#x %#x]", got, a, b)
	}
	k.Forget(a)
	if got := k.Used(); len(got) != 1 || got[0] != b {
		t.Fatalf("Used() after Forget(%#x) = %#x, want [%#x]", a, got, b)
	}
}

func TestKeysFreeSkipsAKeyInUse(t *testing.T) {
	k := NewKeys(0x5e00, 1, 0, 0x10)
	held := k.next
	o, err := create(Shm, held)
	if err != nil {
		t.Fatalf("create a segment at %#x: %v", held, err)
	}
	defer func() { _ = Remove(o) }()
	got, err := k.Free(4)
	if err != nil || got == held {
		t.Fatalf("Free() = %#x, %v: want a key other than the held %#x", got, err, held)
	}
}
