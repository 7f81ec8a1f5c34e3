package sender

import (
	"errors"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func TestCredits(t *testing.T) {
	c := credits{nbufs: 4}
	if err := c.add(wire.Credit{Seq: 1, Index: 0}); !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("out-of-order credit: %v", err)
	}
	if err := c.add(wire.Credit{Seq: 0, Index: 4}); !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("credit outside the ring: %v", err)
	}
	for i := range 3 {
		if err := c.add(wire.Credit{Seq: uint64(i), Index: uint32((i + 2) % 4)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.lookup(3); ok {
		t.Fatal("found a credit that was never granted")
	}
	// Queue pairs running ahead use several grants at once, in any order.
	for _, i := range []int{2, 0, 1, 2} {
		if cr, ok := c.lookup(uint64(i)); !ok || cr.Index != uint32((i+2)%4) {
			t.Fatalf("lookup(%d) = %+v, %v", i, cr, ok)
		}
	}
	c.release(2)
	for i := range 2 {
		if _, ok := c.lookup(uint64(i)); ok {
			t.Fatalf("credit %d still there after release(2)", i)
		}
	}
	if cr, ok := c.lookup(2); !ok || cr.Index != 0 {
		t.Fatalf("lookup(2) after release(2) = %+v, %v", cr, ok)
	}
	if err := c.add(wire.Credit{Seq: 3, Index: 1}); err != nil {
		t.Fatal(err)
	}
	c.release(10)
	if _, ok := c.lookup(3); ok || len(c.queue) != 0 {
		t.Fatalf("release(10) left %+v", c.queue)
	}
}
