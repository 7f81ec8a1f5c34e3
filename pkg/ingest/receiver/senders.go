package receiver

import (
	"log/slog"
	"sync/atomic"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// gate refuses the packets of senders outside the allowlist (--allowed-senders) before
// the pipeline, counting them and logging the first sender refused.
type gate struct {
	allow   *endpoint.SenderFilter // nil: every sender
	log     *slog.Logger
	refused atomic.Uint64
}

// admits reports whether p may go on to the pipeline; it allocates nothing but for the
// first refusal's log line.
func (g *gate) admits(p udp.Packet) bool {
	if g == nil || g.allow.AllowsAddr(p.Source.Addr()) {
		return true
	}
	if g.refused.Add(1) == 1 {
		g.log.Warn("Refused packets from a sender outside the allowlist (counted in status packets.refused; later ones are not logged)",
			"sender", p.Source.String(), "allowed", g.allow.String())
	}
	return false
}

// count is the packets refused so far.
func (g *gate) count() uint64 {
	if g == nil {
		return 0
	}
	return g.refused.Load()
}

// newGate is the allowlist spec of --allowed-senders for sockets bound as u says, nil
// when every sender may send.
func newGate(spec string, u udp.Config, log *slog.Logger) (*gate, error) {
	bound := u.Address
	if u.InterfaceAddr.IsValid() {
		bound = u.InterfaceAddr
	}
	f, err := endpoint.PacketSenders(spec, bound, u.Interface)
	if err != nil || f == nil {
		return nil, err
	}
	return &gate{allow: f, log: log}, nil
}
