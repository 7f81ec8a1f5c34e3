package ofifabric

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Config names the libfabric domain an adapter opens and the transfer mode
// it must carry (which decides the capabilities and ordering asked for).
type Config struct {
	// Provider is a provider name such as "tcp;ofi_rxm", "verbs;ofi_rxm",
	// "efa" or "shm" (empty: the first fi_getinfo offers).
	Provider string
	// Domain is a domain name such as "lo", "rxe0" or "rdmap0s6-rdm"
	// (empty: the provider's first).
	Domain string
	// Node is the local address to bind (e.g. "127.0.0.1"; empty: any).
	Node string
	Mode wire.Mode
	// LengthMessages makes write mode carry every immediate and its write's
	// length in a message after the write even where the provider has 8
	// bytes of remote CQ data (tests exercise the narrow providers' path on
	// tcp;ofi_rxm with it); both ends must agree.
	LengthMessages bool
	// Log receives what the sender reports once (nil: slog.Default()): that
	// its completion queues have no wait fds, so it polls while every send
	// slot is in flight.
	Log *slog.Logger
}

// wideData is the remote CQ data that carries an immediate and a length.
const wideData = 8

// lengthMessages says whether write mode sends each immediate, with its
// write's length, in a message after a plain write (see the package doc):
// where remote CQ data cannot carry the length too, since a remote write's
// completion length is not reliable across providers (fi_cq(3)).
func lengthMessages(cfg Config, i ofi.Info) bool {
	return cfg.Mode == wire.ModeWrite && (cfg.LengthMessages || i.CQDataSize < wideData)
}

// immBytes is the remote CQ data the engine's immediates need.
const immBytes = 4

// Order is the message ordering a mode needs (see the package doc).
func Order(m wire.Mode) ofi.Order {
	if m == wire.ModeWrite {
		return ofi.OrderWAW
	}
	return ofi.OrderSAS
}

// caps is what a mode needs of the provider.
func caps(m wire.Mode) ofi.Caps {
	if m == wire.ModeWrite {
		return ofi.CapMsg | ofi.CapRMA
	}
	return ofi.CapMsg
}

func (c Config) hints() ofi.Hints {
	return ofi.Hints{Provider: c.Provider, Domain: c.Domain, Node: c.Node, Source: c.Node != "", Caps: caps(c.Mode), MsgOrder: Order(c.Mode)}
}

// Lacks says what a provider's answer lacks for a transfer mode ("" when
// nothing): FI_RMA for write mode, 4 bytes of remote CQ data, the ordering
// (with fewer than 8 bytes of CQ data write mode sends length messages
// after its writes: send after write too).
func Lacks(m wire.Mode, i ofi.Info) string {
	var miss []string
	if m == wire.ModeWrite && i.Caps&ofi.CapRMA == 0 {
		miss = append(miss, "FI_RMA (fi_writedata into the ring)")
	}
	if i.CQDataSize < immBytes {
		miss = append(miss, fmt.Sprintf("%d bytes of remote CQ data for the immediate (cq_data_size %d)", immBytes, i.CQDataSize))
	}
	need := Order(m)
	if m == wire.ModeWrite && i.CQDataSize < wideData {
		need |= ofi.OrderSAW // the length message lands after its write
	}
	if i.TxMsgOrder&need != need || i.RxMsgOrder&need != need {
		miss = append(miss, fmt.Sprintf("message order %v (it keeps %v transmitting, %v receiving)", need, i.TxMsgOrder, i.RxMsgOrder))
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("libfabric provider %q (domain %q) cannot carry %s mode: it lacks %s", i.Provider, i.Domain, m, strings.Join(miss, "; "))
}

// ErrUnsuitable is wrapped by the error for a provider that lacks what the
// transfer mode needs.
var ErrUnsuitable = errors.New("libfabric provider unsuitable")

// openDomain opens the domain cfg names, asking for what the mode needs;
// when no provider offers it, it says what the named one lacks.
func openDomain(cfg Config) (*ofi.Domain, error) {
	if cfg.Mode != wire.ModeSend && cfg.Mode != wire.ModeWrite {
		return nil, fmt.Errorf("open libfabric domain: unknown transfer mode %v", cfg.Mode)
	}
	d, err := ofi.Open(cfg.hints())
	if err != nil {
		loose := cfg.hints()
		loose.Caps, loose.MsgOrder = ofi.CapMsg, 0
		if infos, derr := ofi.Discover(loose); derr == nil {
			if why := Lacks(cfg.Mode, infos[0]); why != "" {
				return nil, fmt.Errorf("%w: %s", ErrUnsuitable, why)
			}
		}
		return nil, err
	}
	if why := Lacks(cfg.Mode, d.Info()); why != "" {
		_ = d.Close()
		return nil, fmt.Errorf("%w: %s", ErrUnsuitable, why)
	}
	return d, nil
}

// fabricOf names the transport and provider of an opened domain.
func fabricOf(d *ofi.Domain) wire.Fabric {
	return wire.Fabric{Transport: wire.TransportOFI, Provider: d.Info().Provider}
}
