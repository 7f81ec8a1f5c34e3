package receiver

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// The log names the pinned threads' CPUs, socket by socket, and nothing for threads left
// to the scheduler.
func TestThreadCPUs(t *testing.T) {
	for _, c := range []struct {
		socks []udp.SocketInfo
		want  string
	}{
		{nil, ""},
		{[]udp.SocketInfo{{}, {}}, ""},
		{[]udp.SocketInfo{{Pinned: true, CPU: 1}, {Pinned: true, CPU: 0}}, "1,0"},
	} {
		if got := threadCPUs(c.socks); got != c.want {
			t.Errorf("threadCPUs(%+v) = %q, want %q", c.socks, got, c.want)
		}
	}
}
