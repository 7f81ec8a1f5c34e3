package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/ofifabric"
	"github.com/ringcap/ringcap/pkg/capture/verbsfabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// The environment that sets the transport flags' defaults (the device
// plugin sets them for EFA pools).
const (
	EnvTransport   = "RINGCAP_TRANSPORT"
	EnvOFIProvider = "RINGCAP_OFI_PROVIDER"
	EnvOFIDomain   = "RINGCAP_OFI_DOMAIN"
)

// transportFlags are --transport, --ofi-provider and --ofi-domain, shared by
// recv and send.
type transportFlags struct {
	transport, provider, domain string
	// envProvider and envDomain are the environment's defaults: they apply
	// with the ofi transport only, so a verbs run in an EFA pool ignores them.
	envProvider, envDomain string
}

func (f *transportFlags) add(c *cobra.Command, getenv func(string) string) {
	fs := c.Flags()
	fs.StringVar(&f.transport, "transport", cmp.Or(getenv(EnvTransport), "verbs"), "fabric: verbs (RC queue pairs over libibverbs) or ofi (reliable-datagram endpoints over libfabric) (default: $"+EnvTransport+", else verbs)")
	ownDefault(fs, "transport")
	f.envProvider, f.envDomain = getenv(EnvOFIProvider), getenv(EnvOFIDomain)
	fs.StringVar(&f.provider, "ofi-provider", "", "with --transport ofi: the libfabric provider, e.g. efa, verbs;ofi_rxm, tcp;ofi_rxm, shm (default: $"+EnvOFIProvider+", else the first fi_getinfo offers; a sender takes the receiver's)")
	fs.StringVar(&f.domain, "ofi-domain", "", "with --transport ofi: the libfabric domain, e.g. lo (tcp on loopback), rxe0, rdmap0s6-rdm (default: $"+EnvOFIDomain+", else the provider's first)")
}

// parse checks the flags: the transport, and the ofi flags only with ofi.
func (f *transportFlags) parse() (wire.Fabric, error) {
	t, err := wire.ParseTransport(f.transport)
	if err != nil {
		return wire.Fabric{}, fmt.Errorf("--transport: %w", err)
	}
	if t != wire.TransportOFI {
		if f.provider != "" || f.domain != "" {
			return wire.Fabric{}, fmt.Errorf("--ofi-provider %q / --ofi-domain %q apply only with --transport ofi", f.provider, f.domain)
		}
		return wire.Fabric{Transport: t}, nil
	}
	f.provider, f.domain = cmp.Or(f.provider, f.envProvider), cmp.Or(f.domain, f.envDomain)
	fb := wire.Fabric{Transport: t, Provider: f.provider}
	if f.provider != "" {
		if err := fb.Validate(); err != nil {
			return wire.Fabric{}, fmt.Errorf("--ofi-provider: %w", err)
		}
	}
	return fb, nil
}

// bindHost is the local address a libfabric endpoint binds to for a listen
// or local address: its IP when specific, else none (any).
func bindHost(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	return ""
}

// openReceiverFabric opens the receiver's fabric of the transport over the ring.
func openReceiverFabric(fb wire.Fabric, domain, listen string, mode wire.Mode, mr fabric.MRMode, logf func(string)) func(fabric.DeviceConfig, *dada.Ring) (fabric.ReceiverFabric, error) {
	return func(dev fabric.DeviceConfig, ring *dada.Ring) (fabric.ReceiverFabric, error) {
		if fb.Transport == wire.TransportOFI {
			node := cmp.Or(dev.Node, bindHost(listen)) // listen-on rdma: the chosen address
			return ofifabric.NewReceiver(ofifabric.Config{Provider: fb.Provider, Domain: domain, Node: node, Mode: mode}, ring, mr, logf)
		}
		return verbsfabric.NewReceiver(dev, ring, mr, logf)
	}
}

// openSenderFabric opens the sender's fabric: libfabric on dev's provider
// and domain, bound toward the receiver at connect, logging to log, or
// libibverbs.
func openSenderFabric(fb wire.Fabric, connect string, log *slog.Logger) func(fabric.DeviceConfig, wire.Mode, uint64) (fabric.SenderFabric, error) {
	return func(dev fabric.DeviceConfig, mode wire.Mode, bufBytes uint64) (fabric.SenderFabric, error) {
		if fb.Transport == wire.TransportOFI {
			return ofifabric.NewSender(ofifabric.Config{Provider: dev.Provider, Domain: dev.Domain, Node: localHost(connect), Mode: mode, Log: log}, bufBytes)
		}
		return verbsfabric.NewSender(dev, bufBytes)
	}
}

// localHost is the local IP the kernel would use toward addr ("" when
// unknown): the sender's endpoints bind there.
func localHost(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return ""
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// fabricWords ends the send summary: the transport and, for ofi, the
// provider (nothing when the fabric was never opened).
func fabricWords(f wire.Fabric) string {
	switch f.Transport {
	case 0:
		return ""
	case wire.TransportOFI:
		return fmt.Sprintf(" transport=ofi provider=%s", f.Provider)
	}
	return " transport=" + f.Transport.String()
}
