package receiver

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// The address bound: --udp-address, else the --listen address, else the
// wildcard; with groups the wildcard, the groups joined on the address's
// interface.
func TestBindConfig(t *testing.T) {
	lo, group := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("239.2.1.150")
	noenv := func(string) string { return "" }
	for _, c := range []struct {
		name        string
		cfg         Config
		addr, iface netip.Addr
	}{
		{"given", Config{UDP: udp.Config{Address: lo}, Listen: endpoint.Listen{Addr: "0.0.0.0:18515"}}, lo, netip.Addr{}},
		{"listen", Config{Listen: endpoint.Listen{Addr: "127.0.0.1:18515", On: endpoint.ListenAny}}, lo, netip.Addr{}},
		{"listen any", Config{Listen: endpoint.Listen{Addr: "0.0.0.0:18515"}}, netip.IPv4Unspecified(), netip.Addr{}},
		{"none", Config{}, netip.IPv4Unspecified(), netip.Addr{}},
		{"groups", Config{UDP: udp.Config{Address: lo, Groups: []netip.Addr{group}}}, netip.IPv4Unspecified(), lo},
		{"groups on a named interface", Config{UDP: udp.Config{Address: lo, Groups: []netip.Addr{group}, Interface: "lo"}}, netip.IPv4Unspecified(), netip.Addr{}},
	} {
		c.cfg.Getenv = noenv
		u, _, err := c.cfg.bindConfig(slog.New(slog.DiscardHandler))
		if err != nil || u.Address != c.addr || u.InterfaceAddr != c.iface {
			t.Errorf("%s: address %v, interface address %v, %v; want %v, %v", c.name, u.Address, u.InterfaceAddr, err, c.addr, c.iface)
		}
	}
	_, _, err := Config{Listen: endpoint.Listen{Addr: ":18515", On: endpoint.ListenRDMA}, Getenv: noenv}.bindConfig(slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "needs an RDMA device") {
		t.Errorf("listen-on rdma: %v", err)
	}
}

// A socket buffer short of the request names the sysctl, in the status.
func TestBufferNote(t *testing.T) {
	if n := bufferNote([]udp.SocketInfo{{}, {}}); n != "" {
		t.Errorf("no shortfall: %q", n)
	}
	be := &udp.BufferError{Wanted: 64 << 20, Obtained: 4 << 20, RmemMax: 4 << 20, Force: errors.New("operation not permitted")}
	n := bufferNote([]udp.SocketInfo{{}, {BufferErr: be}})
	for _, w := range []string{"wanted 67108864 bytes, obtained 4194304", "sysctl -w net.core.rmem_max=67108864"} {
		if !strings.Contains(n, w) {
			t.Errorf("note %q lacks %q", n, w)
		}
	}
	if c := strings.Count(n, "sysctl -w"); c != 1 {
		t.Errorf("note %q names `sysctl -w` %d times, want once", n, c)
	}
}

// The state message keeps the buffer note, Listening and Receiving alike.
func TestListeningSaysBufferShort(t *testing.T) {
	tr := status.NewTracker()
	s := newSession(Config{Stream: stream.Config{Protocol: stream.SPEAD}}, stream.Config{}, nil, udpStats{}, tr, slog.New(slog.DiscardHandler))
	be := &udp.BufferError{Wanted: 64 << 20, Obtained: 4 << 20, RmemMax: 4 << 20, Force: errors.New("operation not permitted")}
	s.listening([]udp.SocketInfo{{Local: netip.MustParseAddrPort("127.0.0.1:7148"), BufferErr: be}}, "")
	st := tr.Snapshot()
	if st.State != statusdoc.StateListening || !strings.Contains(st.Message, "127.0.0.1:7148") || !strings.Contains(st.Message, "sysctl -w net.core.rmem_max=67108864") {
		t.Errorf("state %s: %q", st.State, st.Message)
	}
	if st.Endpoint.Address != "127.0.0.1" || st.Endpoint.Port != 7148 || st.Endpoint.GIDIndex != nil {
		t.Errorf("endpoint %+v", st.Endpoint)
	}
}

type udpStats struct{}

func (udpStats) Stats() udp.Stats { return udp.Stats{} }
