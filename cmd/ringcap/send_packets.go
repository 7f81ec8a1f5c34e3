package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ringcap/ringcap/pkg/ingest/sender"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
)

// sendPacketFlags are send's flags for a UDP packet stream (--protocol
// spead|vdif): recv's placement rule flags and the sender's own.
type sendPacketFlags struct {
	protocol    string
	rate        byteRate
	packetBytes uint64
	dropEvery   uint64
	ttl         int
	mcIface     string
	spead       speadFlags
	vdif        vdifFlags
}

// byteRate is a rate flag in bytes per second: a size, optionally with /s.
type byteRate uint64

func (r *byteRate) String() string { return (*byteSize)(r).String() }
func (r *byteRate) Type() string   { return "bytes/s" }
func (r *byteRate) Set(s string) error {
	return (*byteSize)(r).Set(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
}

func (p *sendPacketFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.protocol, "protocol", protoRDMA, "what to send: rdma (to ringcap recv over RC queue pairs), spead or vdif (the test pattern as UDP packets to ringcap recv --protocol spead|vdif with the same rule flags)")
	fs.Var(&p.rate, "rate", "with spead or vdif: payload bytes per second at most, e.g. 20M or 20MB/s (binary units; 0: unlimited)")
	fs.Var((*byteSize)(&p.packetBytes), "packet-bytes", fmt.Sprintf("with spead: payload bytes per packet, at most the heap (--spead-heap-bytes, default one packet per heap; default %d)", sender.DefaultPacketBytes))
	fs.Uint64Var(&p.dropEvery, "drop-every", 0, "with spead or vdif: skip every Nth packet (a loss test; the receiver zero-fills their bytes)")
	fs.IntVar(&p.ttl, "multicast-ttl", 0, "with spead or vdif to a multicast group: the packets' IP TTL (0: the system's, 1)")
	fs.StringVar(&p.mcIface, "multicast-interface", "", "with spead or vdif to a multicast group: the interface the packets leave by (default: the route's); receivers on this host that joined the group on it get them too")
	p.spead.add(fs)
	p.vdif.add(fs)
}

// packet reports whether the flags ask for a packet stream.
func (p *sendPacketFlags) packet() bool { return p.protocol != protoRDMA }

// packetOnly are send's flags that only a packet stream takes.
var packetOnly = map[string]bool{"rate": true, "packet-bytes": true, "drop-every": true, "multicast-ttl": true, "multicast-interface": true}

// check refuses an unknown protocol and flags of another protocol.
func (p *sendPacketFlags) check(fs *pflag.FlagSet) error {
	switch p.protocol {
	case protoRDMA, protoSPEAD, protoVDIF:
	default:
		return fmt.Errorf("--protocol %q: want rdma, spead or vdif", p.protocol)
	}
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		owner := flagProtocol(f.Name)
		if packetOnly[f.Name] {
			owner = "packet"
		}
		if !protocolFits(p.protocol, owner) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s: not for --protocol %s", strings.Join(bad, ", "), p.protocol)
	}
	return nil
}

// config is the sender run the flags describe.
func (p *sendPacketFlags) config(o *sendOpts) (sender.Config, error) {
	c := sender.Config{Target: o.connect, Bytes: o.bytes, Seed: o.seed, RateBytesPerSecond: float64(p.rate),
		PacketBytes: p.packetBytes, DropEvery: p.dropEvery, MulticastTTL: p.ttl, MulticastInterface: p.mcIface}
	var err error
	if p.protocol == protoSPEAD {
		c.Stream, err = p.spead.config()
	} else {
		c.Stream, err = p.vdif.config()
	}
	if err != nil {
		return c, err
	}
	if c.Stream.Protocol == stream.SPEAD && p.packetBytes > 0 && c.Stream.SPEAD.HeapSize > 0 && p.packetBytes > c.Stream.SPEAD.HeapSize {
		return c, fmt.Errorf("--packet-bytes %d: more than a heap (--spead-heap-bytes %d)", p.packetBytes, c.Stream.SPEAD.HeapSize)
	}
	switch {
	case o.connect == "":
		return c, fmt.Errorf("--connect HOST:PORT is required")
	case o.bytes == 0:
		return c, fmt.Errorf("--protocol %s needs --bytes", p.protocol)
	case o.file != "" || o.noFill || o.duration > 0:
		return c, fmt.Errorf("--protocol %s sends the test pattern (--seed) for --bytes: no --file, --no-fill or --duration", p.protocol)
	case p.dropEvery == 1:
		return c, fmt.Errorf("--drop-every 1 would send nothing")
	}
	return c, nil
}

// runPacketSend sends the test pattern as SPEAD heaps or VDIF frames and
// prints the summary line.
func runPacketSend(cmd *cobra.Command, o *sendOpts) error {
	cfg, err := o.packets.config(o)
	if err != nil {
		return err
	}
	res, err := sender.Run(cmd.Context(), cfg)
	gbps := 0.0
	if res.Seconds > 0 {
		gbps = float64(res.PayloadBytes) * 8 / res.Seconds / 1e9
	}
	outf(cmd.OutOrStdout(), "send: bytes=%d packets=%d payload_bytes=%d dropped_packets=%d dropped_bytes=%d stop_heaps=%d seconds=%.3f gbps=%.3f protocol=%s complete=%v\n",
		res.Bytes, res.Packets, res.PayloadBytes, res.DroppedPackets, res.DroppedBytes, res.StopHeaps, res.Seconds, gbps, o.packets.protocol, res.Complete && err == nil)
	return err
}
