package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/ingest/receiver"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// The receiver's protocols (--protocol): RDMA, or a packet stream over UDP.
const (
	protoRDMA  = "rdma"
	protoSPEAD = string(stream.SPEAD)
	protoVDIF  = string(stream.VDIF)
)

// packetFlags are recv's flags for a packet stream (--protocol spead|vdif).
type packetFlags struct {
	protocol  string
	ports     string
	address   string
	multicast string
	iface     string
	sockets   int
	cpus      string
	buffer    uint64
	reorder   int
	idle      time.Duration
	gather    time.Duration
	stopHeaps int
	spead     speadFlags
	vdif      vdifFlags
	presence  presenceFlags
}

func (p *packetFlags) add(c *cobra.Command) {
	fs := c.Flags()
	p.buffer = 64 << 20
	fs.StringVar(&p.protocol, "protocol", protoRDMA, "what the receiver takes in: rdma (senders over RC queue pairs), spead or vdif (a UDP packet stream, placed in the ring by each packet's index; no RDMA device)")
	fs.StringVar(&p.ports, "udp-ports", "", "with spead or vdif: UDP ports to listen on, e.g. 7148,7149 (required)")
	fs.StringVar(&p.address, "udp-address", "", "with spead or vdif: address to bind (default: the --listen/--listen-on address, else 0.0.0.0; with --multicast the wildcard is bound and this names the interface)")
	fs.StringVar(&p.multicast, "multicast", "", "with spead or vdif: IPv4 multicast groups to join, e.g. 239.2.1.150,239.2.1.151")
	fs.StringVar(&p.iface, "multicast-interface", "", "with --multicast: the interface to join the groups on (default: the one holding --udp-address)")
	fs.IntVar(&p.sockets, "udp-sockets", 1, "with spead or vdif: sockets per port (SO_REUSEPORT), each with its own receive thread")
	fs.StringVar(&p.cpus, "udp-cpus", "", "with spead or vdif: pin the receive threads, one to each CPU in turn (socket by socket, port by port): a CPU list such as 2,3 or 2-5, or auto (the CPUs this process may run on, e.g. a pod's exclusive CPUs); default: not pinned")
	fs.Var((*byteSize)(&p.buffer), "udp-buffer", "with spead or vdif: socket receive buffer (SO_RCVBUF) per socket, e.g. 256M; above net.core.rmem_max it needs CAP_NET_ADMIN")
	fs.DurationVar(&p.gather, "udp-gather", udp.DefaultGather, "with spead or vdif: the longest a receive thread sleeps to let datagrams gather before it reads them, when the stream fills less than a batch of 64 between reads (a wake-up per batch, not per datagram); 0 reads each datagram as it arrives")
	fs.IntVar(&p.reorder, "reorder-blocks", receiver.DefaultReorderBlocks, "with spead or vdif: ring blocks open at once for late packets (the reorder window)")
	fs.DurationVar(&p.idle, "udp-idle-timeout", 0, "with spead or vdif: end the observation once no packet has arrived for this long after the first, e.g. 10s (0: never); the blocks still open are handed over with their gaps zero-filled")
	fs.IntVar(&p.stopHeaps, "spead-stop-heaps", 1, "with spead: end the observation after this many stream-stop heaps (stream control item 0x6 = 2; one per sender that ends its stream; 0: count them only)")
	p.spead.add(fs)
	p.vdif.add(fs)
	p.presence.add(fs)
}

// packet reports whether the flags ask for a packet stream.
func (p *packetFlags) packet() bool { return p.protocol != protoRDMA }

// stopObservationsFlag does not apply to a packet stream: one run is one
// observation.
const stopObservationsFlag = "stop-observations"

// check refuses what does not fit the protocol: an unknown protocol, packet
// flags without a packet protocol, flags of the other packet protocol.
func (p *packetFlags) check(fs *pflag.FlagSet) error {
	switch p.protocol {
	case protoRDMA, protoSPEAD, protoVDIF:
	default:
		return fmt.Errorf("--protocol %q: want rdma, spead or vdif", p.protocol)
	}
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		if owner := flagProtocol(f.Name); owner != "" && !p.fits(owner) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s: not for --protocol %s", strings.Join(bad, ", "), p.protocol)
	}
	if p.packet() && fs.Changed(stopObservationsFlag) {
		return fmt.Errorf("--%s: a %s capture is one observation; stop it with --stop-bytes or --stop-duration", stopObservationsFlag, p.protocol)
	}
	return nil
}

// flagProtocol is the protocol a flag belongs to: "packet" (either packet
// protocol), "spead", "vdif", or "" (any).
func flagProtocol(name string) string {
	switch {
	case strings.HasPrefix(name, "spead-"):
		return protoSPEAD
	case strings.HasPrefix(name, "vdif-"):
		return protoVDIF
	case strings.HasPrefix(name, "udp-"), strings.HasPrefix(name, "multicast"), name == "reorder-blocks", strings.HasPrefix(name, "presence-"):
		return "packet"
	}
	return ""
}

// fits reports whether a flag of owner's applies to the protocol.
func (p *packetFlags) fits(owner string) bool { return protocolFits(p.protocol, owner) }

// protocolFits reports whether a flag of owner's (flagProtocol) applies to
// protocol; send and recv share it.
func protocolFits(protocol, owner string) bool {
	return owner == "" || owner == protocol || owner == "packet" && protocol != protoRDMA
}

// config is the packet receiver the flags describe.
func (p *packetFlags) config(o *recvOpts) (receiver.Config, error) {
	c := receiver.Config{ReorderBlocks: p.reorder, StopBytes: o.stopBytes, StopDuration: o.stopDur, NewStyleHeader: o.newStyle,
		IdleTimeout: p.idle}
	if p.protocol == protoSPEAD {
		c.StopHeaps = p.stopHeaps
	}
	var err error
	if c.UDP, err = p.udpConfig(); err != nil {
		return c, err
	}
	c.Listen.Addr, c.Listen.On, c.Listen.Interface, c.Listen.Allowed = o.listen, o.listenOn, o.listenIface, o.allowed
	if c.Stream, err = p.streamConfig(); err != nil {
		return c, err
	}
	if c.Stream.Template, err = headerTemplate(o.headerFile, o.headers); err != nil {
		return c, err
	}
	if c.Presence, err = p.presence.config(o); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("--protocol %s: %w", p.protocol, err)
	}
	return c, nil
}

// streamConfig is the protocol's placement rule, start and time.
func (p *packetFlags) streamConfig() (stream.Config, error) {
	if p.protocol == protoSPEAD {
		return p.spead.config()
	}
	return p.vdif.config()
}

// runPacketRecv runs a packet-stream receiver into the ring, as capture.Run
// runs an RDMA one (ring, status, stop, drain).
func runPacketRecv(ctx context.Context, errw io.Writer, o *recvOpts) error {
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := o.packets.config(o)
	if err != nil {
		return err
	}
	return capture.Run(ctx, capture.Capture{
		Ring: o.ring, Create: o.create, Wait: o.wait, Drain: o.drain,
		Receiver:    capture.ReceiverConfig{Log: log},
		ServeRing:   cfg.ServeRing,
		MetricsAddr: o.metricsAddr, SummaryFile: o.summaryFile,
	})
}
