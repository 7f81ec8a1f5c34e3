package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/capture"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

func init() { register(newRecvCmd) }

// Environment the device plugin sets in the container (see cmd/plugin).
const (
	envDevice   = "RINGCAP_RDMA_DEVICE"
	envPort     = "RINGCAP_RDMA_PORT"
	envGIDIndex = "RINGCAP_GID_INDEX"
)

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
	headerFile  string
	headers     []string
	newStyle    bool
	stopBytes   uint64
	stopDur     time.Duration
	stopObs     int
	metricsAddr string
	summaryFile string
	wait        time.Duration
}

// devFlags are the --device/--ib-port/--gid-index flags shared by recv and send.
type devFlags struct {
	device   string
	port     int
	gidIndex int
	// ignoreEnvGID leaves out the device plugin's GID index (it is the node netdev's;
	// a pod's own interface has GIDs of its own).
	ignoreEnvGID bool
}

func (d *devFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&d.device, "device", "", "RDMA device (default: $"+envDevice+", else the device whose RoCE v2 GID carries the address in use)")
	fs.IntVar(&d.port, "ib-port", 0, "device port (default: $"+envPort+", else the first active port)")
	fs.IntVar(&d.gidIndex, "gid-index", -1, "GID index (default: $"+envGIDIndex+", else automatic: RoCE v2, IPv4-mapped preferred)")
}

// choose discovers the RDMA devices and picks the device, port and GID for ip
// (the flags, then the device plugin's environment, then automatically), and
// logs the choice. localIPs are this host's (pod's) addresses, or nil.
func (d *devFlags) choose(ip net.IP, localIPs []net.IP, log *slog.Logger) (capture.DeviceConfig, capture.EndpointStatus, []rdma.Device, error) {
	req, err := d.request(ip)
	if err != nil {
		return capture.DeviceConfig{}, capture.EndpointStatus{}, nil, err
	}
	req.LocalIPs = localIPs
	devs, _, err := rdma.Discover(rdma.DefaultRoots)
	if err != nil {
		return capture.DeviceConfig{}, capture.EndpointStatus{}, nil, fmt.Errorf("discover RDMA devices: %w", err)
	}
	devCfg, ep, err := capture.ChooseEndpoint(devs, req)
	if err != nil {
		return capture.DeviceConfig{}, capture.EndpointStatus{}, nil, err
	}
	log.Info("Chose RDMA endpoint", "device", ep.Device, "port", ep.IBPort, "gidIndex", devCfg.GIDIndex, "gid", ep.GID, "netdev", ep.Netdev, "reason", ep.GIDReason)
	return devCfg, ep, devs, nil
}

// request merges flags, then the device plugin's environment.
func (d *devFlags) request(ip net.IP) (capture.EndpointRequest, error) {
	req := capture.EndpointRequest{Device: d.device, Port: d.port, GIDIndex: d.gidIndex, IP: ip, Source: "flags"}
	fromEnv := false
	if req.Device == "" {
		if v := os.Getenv(envDevice); v != "" {
			req.Device, fromEnv = v, true
		}
	}
	if req.Port == 0 {
		if v := os.Getenv(envPort); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil {
				return req, fmt.Errorf("$%s=%q: %w", envPort, v, err)
			}
			req.Port, fromEnv = p, true
		}
	}
	if req.GIDIndex < 0 && !d.ignoreEnvGID {
		if v := os.Getenv(envGIDIndex); v != "" {
			g, err := strconv.Atoi(v)
			if err != nil {
				return req, fmt.Errorf("$%s=%q: %w", envGIDIndex, v, err)
			}
			req.GIDIndex, fromEnv = g, true
		}
	}
	if fromEnv {
		req.Source = "the device plugin environment"
	}
	return req, nil
}

func newRecvCmd() *cobra.Command {
	o := &recvOpts{ring: dada.DefaultConfig()}
	c := &cobra.Command{
		Use:   "recv",
		Short: "Receive a stream over RDMA (several RC queue pairs) into a PSRDADA ring",
		Long: "recv becomes the writer of a ring and waits for senders on a TCP port. Each sender's stream\n" +
			"is one observation: a header, then the data, placed in ring blocks by sequence number, ending\n" +
			"with end-of-data on the exact byte count. Status is served as JSON on /status and as\n" +
			"Prometheus metrics on /metrics (--metrics-addr).",
		Example: "  ringcap recv -k dada --create -b 1048576 -n 8 --qps 4 --mode write --listen 198.18.0.2:18515\n" +
			"  ringcap recv -k dada --mode send --stop-observations 1 --summary-file /tmp/summary.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	fs.DurationVar(&o.wait, "wait", 0, "without --create: wait this long for the ring to exist")
	fs.StringVar(&o.mode, "mode", "send", "transfer mode: send (receive WRs point into ring blocks) or write (RDMA WRITE into granted blocks)")
	fs.StringVar(&o.mr, "mr", "auto", "memory registration: auto, wholering (one MR over the contiguously mapped ring) or perblock")
	fs.StringVar(&o.listen, "listen", "0.0.0.0:18515", "TCP address for the connection handshake")
	fs.StringVar(&o.listenOn, "listen-on", listenAny, "which address to listen on: any (--listen's), rdma (the address of the RoCE v2 GID in use, on the RDMA netdev) or attachment=NAMESPACE/NAME (the pod's interface of that network attachment, with the GID of its address)")
	fs.StringVar(&o.listenIface, "listen-interface", "", "with --listen-on attachment=...: the interface (default: from $"+envNetworkStatus+", else "+defaultAttachmentInterface+")")
	fs.StringVar(&o.allowed, "allowed-senders", allowAny, "who may send: any, listen-subnet (the subnet of the listen address) or CIDRs (198.18.0.0/24,10.1.0.7/32); others are refused at the handshake")
	fs.IntVar(&o.qps, "qps", 4, fmt.Sprintf("RC queue pairs per connection (1..%d)", capture.MaxQPs))
	fs.Uint64Var(&o.msgBytes, "msg-bytes", 65536, "bytes per message (the sender must use the same)")
	fs.IntVar(&o.rxDepth, "rx-depth", 128, "receive work requests per queue pair")
	fs.BoolVar(&o.cqPerQP, "cq-per-qp", false, "one completion queue per queue pair (default: one shared)")
	fs.BoolVar(&o.busyPoll, "busy-poll", false, "poll for completions instead of sleeping until one arrives (keeps a CPU busy, as perftest does; on software RDMA such as rxe it takes CPU from the data path)")
	fs.IntVar(&o.window, "window", 0, "ring blocks held open for incoming data (0: automatic)")
	o.dev.add(c)
	fs.StringVar(&o.headerFile, "header-file", "", "ASCII header template for every observation")
	fs.StringArrayVar(&o.headers, "header", nil, "set a header keyword (KEY=VALUE, repeatable; a sender's --header keywords override these)")
	fs.BoolVar(&o.newStyle, "new-style-header", false, "raise end-of-data on the header ring after every header (PSRDADA 1.1.0 dada_client style; the default old style suits every PSRDADA reader)")
	fs.Var((*byteSize)(&o.stopBytes), "stop-bytes", "exit after the observation in which this many bytes (e.g. 10G) were received in total")
	fs.DurationVar(&o.stopDur, "stop-duration", 0, "exit after this long (an observation in progress is finished first)")
	fs.IntVar(&o.stopObs, "stop-observations", 0, "exit after this many observations")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9100", "HTTP address for /metrics and /status (empty: off)")
	fs.StringVar(&o.summaryFile, "summary-file", "", "write the final status JSON here on exit")
	return c
}

func runRecv(ctx context.Context, errw io.Writer, o *recvOpts) (err error) {
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t := capture.NewTracker()
	mode, err := capture.ParseMode(o.mode)
	if err != nil {
		return err
	}
	mrMode, err := verbs.ParseMRMode(o.mr)
	if err != nil {
		return err
	}
	t.Update(func(s *capture.Status) { s.QueuePairs, s.TransferMode, s.BusyPoll = o.qps, mode.String(), o.busyPoll })

	if o.metricsAddr != "" {
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen for metrics on %s: %w", o.metricsAddr, err)
		}
		srv := &http.Server{Handler: t.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("Serving status and metrics", "address", ln.Addr().String())
	}
	// Whatever happens, leave a final state and the summary behind.
	defer func() {
		switch {
		case err != nil:
			t.SetState(capture.StateFailed, err.Error())
		case ctx.Err() != nil:
			t.SetState(capture.StateFinished, "stopped by signal")
		default:
			t.SetState(capture.StateFinished, "stop condition reached")
		}
		if o.summaryFile != "" {
			if werr := t.WriteSummary(o.summaryFile); werr != nil {
				log.Error("Writing the summary failed", "file", o.summaryFile, "err", werr)
				if err == nil {
					err = werr
				}
			}
		}
	}()

	// The ring.
	if o.create {
		created, err := dada.Create(o.ring)
		if err != nil {
			return err
		}
		log.Info("Created ring", "key", o.ring.Key.String(), "nbufs", o.ring.NBufs, "bufsz", o.ring.BufSize, "readers", o.ring.Readers)
		defer func() {
			if derr := created.Destroy(); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	h, err := connectWait(ctx, o.ring.Key, dada.ConnectOptions{Contiguous: mrMode != verbs.PerBlock}, o.wait)
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }()
	t.Update(func(s *capture.Status) {
		s.Ring = capture.RingStatus{Key: h.Key().String(), Ready: true, Blocks: h.Data.NBufs(), BlockBytes: h.Data.BufSize(), Readers: h.Data.Readers()}
	})

	// The RDMA endpoint and the address to listen on.
	listenAddr, devCfg, ep, senders, err := o.chooseListen(log)
	if err != nil {
		return err
	}
	_, portStr, _ := net.SplitHostPort(listenAddr)
	ep.Port, _ = strconv.Atoi(portStr)
	t.Update(func(s *capture.Status) { s.Endpoint = ep })

	fab, err := capture.NewVerbsReceiver(devCfg, h.Data, mrMode, func(line string) { log.Info(line) })
	if err != nil {
		return err
	}
	defer func() { _ = fab.Close() }()
	_, _, mri := fab.Registration()
	t.Update(func(s *capture.Status) { s.MemoryRegistration = mri })

	w, err := h.LockWrite(ctx, dada.WriterOptions{NewStyleHeader: o.newStyle})
	if err != nil {
		return fmt.Errorf("become the writer of ring %s: %w", h.Key(), err)
	}
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	tmpl, err := headerTemplate(o.headerFile, o.headers)
	if err != nil {
		return err
	}
	cfg := capture.ReceiverConfig{
		Mode: mode, QPs: o.qps, MsgBytes: o.msgBytes, RxDepth: o.rxDepth, CQPerQP: o.cqPerQP, BusyPoll: o.busyPoll, Window: o.window,
		StopBytes: o.stopBytes, StopDuration: o.stopDur, StopObservations: o.stopObs, Log: log, Senders: senders,
		Header: capture.ObservationHeaders{Template: []byte(tmpl.String()), Size: h.Header.BufSize()},
	}
	rx, err := capture.NewReceiver(cfg, capture.RingGeometryOf(h.Data), capture.DadaWriter{W: w}, fab, t)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("listen for senders on %s: %w", listenAddr, err)
	}
	t.Update(func(s *capture.Status) {
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			s.Endpoint.Port = a.Port
		}
	})
	err = rx.Serve(ctx, ln)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // SIGINT/SIGTERM: a clean stop
	}
	return err
}

// headerTemplate reads the header file (or starts a minimal header) and
// applies --header KEY=VALUE settings.
func headerTemplate(file string, kvs []string) (*dada.Header, error) {
	h := dada.NewHeader()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read header file: %w", err)
		}
		if h, err = dada.ParseHeader(b); err != nil {
			return nil, fmt.Errorf("header file %s: %w", file, err)
		}
	} else {
		for _, kv := range [][2]string{{"HDR_VERSION", "1.0"}, {"INSTRUMENT", "ringcap"}} {
			if err := h.Set(kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %q: want KEY=VALUE", kv)
		}
		if err := h.Set(k, v); err != nil {
			return nil, fmt.Errorf("--header %q: %w", kv, err)
		}
	}
	return h, nil
}

// localIPs lists this host's (pod's) non-loopback addresses.
func localIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP)
		}
	}
	return out
}
