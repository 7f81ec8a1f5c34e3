package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/capture/devices"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/capture/verbsfabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

func init() { register(newRecvCmd) }

type recvOpts struct {
	ring        dada.Config
	create      bool
	mode        string
	mr          string
	listen      string
	listenOn    string
	listenIface string
	allowed     string
	qps         int
	msgBytes    uint64
	rxDepth     int
	cqPerQP     bool
	busyPoll    bool
	window      int
	dev         devFlags
	fabric      transportFlags
	headerFile  string
	headers     []string
	newStyle    bool
	stopBytes   uint64
	stopDur     time.Duration
	stopObs     int
	metricsAddr string
	summaryFile string
	wait        time.Duration
	drain       time.Duration
	packets     packetFlags
}

// devFlags are the --device/--ib-port/--gid-index flags shared by recv and send.
type devFlags struct {
	device   string
	port     int
	gidIndex int
}

func (d *devFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&d.device, "device", "", "RDMA device (default: $"+endpoint.EnvDevice+", else the device whose RoCE v2 GID carries the address in use)")
	fs.IntVar(&d.port, "ib-port", 0, "device port (default: $"+endpoint.EnvPort+", else the first active port)")
	fs.IntVar(&d.gidIndex, "gid-index", -1, "GID index (default: $"+endpoint.EnvGIDIndex+", else automatic: RoCE v2, IPv4-mapped preferred)")
	ownDefault(fs, "gid-index")
}

// request is what the flags ask for.
func (d *devFlags) request() endpoint.Request {
	return endpoint.Request{Device: d.device, Port: d.port, GIDIndex: d.gidIndex, Source: "flags"}
}

func newRecvCmd() *cobra.Command {
	o := &recvOpts{ring: dada.DefaultConfig()}
	c := &cobra.Command{
		Use:   "recv",
		Short: "Receive a stream over RDMA (several RC queue pairs), or a SPEAD or VDIF packet stream over UDP, into a PSRDADA ring",
		Long: "recv becomes the writer of a ring and waits for senders on a TCP port. Each sender's stream\n" +
			"is one observation: a header, then the data, placed in ring blocks by sequence number, ending\n" +
			"with end-of-data on the exact byte count. Status is served as JSON on /status and as\n" +
			"Prometheus metrics on /metrics (--metrics-addr).\n\n" +
			"With --protocol spead or vdif it takes a UDP packet stream instead (a digitiser's or\n" +
			"beamformer's): each packet's payload lands at the place its index gives, missing bytes are\n" +
			"zero-filled, and every packet not written is counted by reason (/status \"packets\").",
		Example: "  ringcap recv -k dada --create -b 1048576 -n 8 --qps 4 --mode write --listen 198.18.0.2:18515\n" +
			"  ringcap recv -k dada --mode send --stop-observations 1 --summary-file /tmp/summary.json\n" +
			"  ringcap recv -k dada --transport ofi --ofi-provider 'tcp;ofi_rxm' --ofi-domain lo --listen 127.0.0.1:18515\n" +
			"  ringcap recv -k dada --create -b 8388608 -n 16 --protocol spead --udp-ports 7148 --spead-timestamp-id 0x1600 \\\n" +
			"      --spead-timestamp-step 2097152 --spead-sync-time-id 0x1027 --spead-sample-rate 1712000000",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.packets.check(cmd.Flags()); err != nil {
				return err
			}
			if o.packets.packet() {
				return runPacketRecv(cmd.Context(), cmd.ErrOrStderr(), o)
			}
			return runRecv(cmd.Context(), cmd.ErrOrStderr(), o)
		},
	}
	fs := c.Flags()
	fs.VarP((*keyValue)(&o.ring.Key), "key", "k", "ring key in hexadecimal (header ring uses key+1)")
	fs.BoolVar(&o.create, "create", false, "create the ring (with -b -n -a -r -l --hugepages) and destroy it on exit")
	fs.Uint64VarP(&o.ring.BufSize, "bufsz", "b", o.ring.BufSize, "with --create: data block size in bytes")
	fs.Uint64VarP(&o.ring.NBufs, "nbufs", "n", o.ring.NBufs, "with --create: number of data blocks")
	fs.Uint64VarP(&o.ring.HeaderBufSize, "hdrsz", "a", o.ring.HeaderBufSize, "with --create: header block size in bytes")
	fs.IntVarP(&o.ring.Readers, "readers", "r", o.ring.Readers, "with --create: number of readers")
	fs.BoolVarP(&o.ring.Lock, "lock", "l", false, "with --create: lock the ring in memory (SHM_LOCK)")
	fs.BoolVar(&o.ring.HugePages, "hugepages", false, "with --create: back data blocks with huge pages")
	fs.Var((*byteSize)(&o.ring.HugePageSize), "hugepage-size", "with --hugepages: the huge page size, e.g. 2M (default: the kernel's)")
	fs.DurationVar(&o.wait, "wait", 0, "without --create: wait this long for the ring to exist")
	fs.DurationVar(&o.drain, "drain-timeout", time.Minute, "with --create, after a stop condition: wait for the readers to read every filled block before destroying the ring, giving up (and failing) after this long without a reader clearing a block (0: destroy at once)")
	fs.StringVar(&o.mode, "mode", "send", "transfer mode: send (receive WRs point into ring blocks) or write (RDMA WRITE into granted blocks)")
	fs.StringVar(&o.mr, "mr", "auto", "memory registration: auto, wholering (one MR over the contiguously mapped ring) or perblock")
	fs.StringVar(&o.listen, "listen", "0.0.0.0:18515", "TCP address for the connection handshake")
	fs.StringVar(&o.listenOn, "listen-on", endpoint.ListenAny, "which address to listen on: any (--listen's), rdma (the address of the RoCE v2 GID in use, on the RDMA netdev) or attachment=NAMESPACE/NAME (the pod's interface of that network attachment, with the GID of its address)")
	fs.StringVar(&o.listenIface, "listen-interface", "", "with --listen-on attachment=...: the interface (default: from $"+endpoint.EnvNetworkStatus+", else "+endpoint.DefaultAttachmentInterface+")")
	fs.StringVar(&o.allowed, "allowed-senders", endpoint.AllowAny, "who may send: any, listen-subnet (the subnet of the listen address) or CIDRs (198.18.0.0/24,10.1.0.7/32); others are refused at the handshake")
	fs.IntVar(&o.qps, "qps", 4, fmt.Sprintf("RC queue pairs per connection (1..%d)", wire.MaxQPs))
	fs.Uint64Var(&o.msgBytes, "msg-bytes", 65536, "bytes per message (the sender must use the same)")
	fs.IntVar(&o.rxDepth, "rx-depth", 128, "receive work requests per queue pair")
	fs.BoolVar(&o.cqPerQP, "cq-per-qp", false, "one completion queue per queue pair (default: one shared)")
	fs.BoolVar(&o.busyPoll, "busy-poll", false, "poll for completions instead of sleeping until one arrives (keeps a CPU busy, as perftest does; on software RDMA such as rxe it takes CPU from the data path)")
	fs.IntVar(&o.window, "window", 0, "ring blocks held open for incoming data (0: automatic)")
	o.dev.add(c)
	o.fabric.add(c, os.Getenv)
	fs.StringVar(&o.headerFile, "header-file", "", "ASCII header template for every observation")
	fs.StringArrayVar(&o.headers, "header", nil, "set a header keyword (KEY=VALUE, repeatable; one printable ASCII word each, not HDR_SIZE, OBS_OFFSET, RINGCAP_* or TRANSFER_SIZE; a sender's --header keywords override these)")
	fs.BoolVar(&o.newStyle, "new-style-header", false, "raise end-of-data on the header ring after every header (PSRDADA 1.1.0 dada_client style; the default old style suits every PSRDADA reader)")
	fs.Var((*byteSize)(&o.stopBytes), "stop-bytes", "exit after the observation in which this many bytes (e.g. 10G) were received in total")
	fs.DurationVar(&o.stopDur, "stop-duration", 0, "exit after this long (an observation in progress is finished first)")
	fs.IntVar(&o.stopObs, "stop-observations", 0, "exit after this many observations")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9100", "HTTP address for /metrics and /status (empty: off)")
	fs.StringVar(&o.summaryFile, "summary-file", "", "write the final status JSON here on exit")
	o.packets.add(c)
	return c
}

func runRecv(ctx context.Context, errw io.Writer, o *recvOpts) error {
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mode, err := wire.ParseMode(o.mode)
	if err != nil {
		return err
	}
	mrMode, err := verbsfabric.ParseMRMode(o.mr)
	if err != nil {
		return err
	}
	tmpl, err := headerTemplate(o.headerFile, o.headers)
	if err != nil {
		return err
	}
	fb, err := o.fabric.parse()
	if err != nil {
		return err
	}
	return capture.Run(ctx, capture.Capture{
		Ring: o.ring, Create: o.create, Wait: o.wait, Drain: o.drain, Connect: dada.ConnectOptions{Contiguous: mrMode != verbsfabric.PerBlock},
		NewStyleHeader: o.newStyle, Device: o.dev.request(), Roots: devices.HostRoots(),
		Listen: endpoint.Listen{Addr: o.listen, On: o.listenOn, Interface: o.listenIface, Allowed: o.allowed},
		Receiver: capture.ReceiverConfig{
			Mode: mode, QPs: o.qps, MsgBytes: o.msgBytes, RxDepth: o.rxDepth, CQPerQP: o.cqPerQP, BusyPoll: o.busyPoll, Window: o.window,
			StopBytes: o.stopBytes, StopDuration: o.stopDur, StopObservations: o.stopObs, Log: log,
			Header: capture.ObservationHeaders{Template: []byte(tmpl.String())},
		},
		Transport:   fb.Transport,
		Open:        openReceiverFabric(fb, o.fabric.domain, o.listen, mode, mrMode, func(line string) { log.Info(line) }),
		MetricsAddr: o.metricsAddr, SummaryFile: o.summaryFile,
	})
}

// headerTemplate reads the header file (or starts a minimal header) and
// applies --header KEY=VALUE settings, refusing what the receiver would
// refuse or misuse later (headerrules): a receiver that cannot build its
// headers fails at start, not at its first sender.
func headerTemplate(file string, kvs []string) (*dada.Header, error) {
	settings, err := headerSettings(kvs)
	if err != nil {
		return nil, err
	}
	var text []byte
	if file != "" {
		if text, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("read header file: %w", err)
		}
		if err := headerrules.CheckTemplate(text); err != nil {
			return nil, fmt.Errorf("header file %s: %w", file, err)
		}
	}
	h, err := headerrules.Template(text, settings)
	if err != nil {
		return nil, fmt.Errorf("--header: %w", err)
	}
	return h, nil
}

// headerSettings splits --header KEY=VALUE settings and checks each.
func headerSettings(kvs []string) ([][2]string, error) {
	var out [][2]string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %q: want KEY=VALUE", kv)
		}
		if err := headerrules.CheckSetting(k, v); err != nil {
			return nil, fmt.Errorf("--header %q: %w", kv, err)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}
