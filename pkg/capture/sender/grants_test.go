package sender

import (
	"errors"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Receive grants are cumulative per queue pair: a slice goes out only below
// its queue pair's grant; a grant that goes back, or names a queue pair the
// connection does not have, is a protocol error.
func TestGrants(t *testing.T) {
	g := make(grants, 2)
	if g.allows(0, 0) || g.allows(1, 1) {
		t.Fatal("a slice allowed before any grant")
	}
	for _, p := range []wire.Posted{{QP: 0, Upto: 8}, {QP: 1, Upto: 3}, {QP: 1, Upto: 3}, {QP: 0, Upto: 10}} {
		if err := g.add(p); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
	}
	if !g.allows(0, 8) || !g.allows(0, 9) || g.allows(0, 10) || !g.allows(1, 1) || g.allows(1, 3) {
		t.Fatalf("grants %v", g)
	}
	for _, p := range []wire.Posted{{QP: 0, Upto: 9}, {QP: 2, Upto: 100}} {
		if err := g.add(p); !errors.Is(err, wire.ErrProtocol) {
			t.Errorf("%+v: %v, want a protocol error", p, err)
		}
	}
	if g[0] != 10 || g[1] != 3 {
		t.Fatalf("a refused grant changed them: %v", g)
	}
}
