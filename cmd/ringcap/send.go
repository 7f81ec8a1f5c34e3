package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringcap/ringcap/pkg/capture/devices"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func init() { register(newSendCmd) }

type sendOpts struct {
	connect    string
	qps        int
	mode       string
	msgBytes   uint64
	txDepth    int
	postList   int
	bytes      uint64
	duration   time.Duration
	seed       uint64
	file       string
	noFill     bool
	pinCPU     string
	threads    int
	busyPoll   bool
	ackTimeout uint8
	rateGbps   float64
	dev        devFlags
	fabric     transportFlags
	progress   time.Duration
	quiet      bool
	headerFile string
	headers    []string
	packets    sendPacketFlags
}

func newSendCmd() *cobra.Command {
	o := &sendOpts{}
	c := &cobra.Command{
		Use:   "send",
		Short: "Stream the deterministic test pattern or a file to a ringcap receiver over RDMA, or the pattern as SPEAD/VDIF over UDP",
		Long: "send connects to `ringcap recv`, negotiates queue pairs and mode, and stripes the stream over the\n" +
			"queue pairs (send mode: message g on queue pair g mod N; write mode: each block whole on the next queue pair with room).\n" +
			"The test pattern (--seed) lets any reader verify every byte: `ringcap ring read --verify SEED`.\n" +
			"Progress lines say when the receiver's ring readers hold it back (no ring block free) and for how long.\n" +
			"The last line is a summary (held_back_seconds: the time the receiver was held back, as it reports):\n" +
			"  send: bytes=N seconds=S gbps=G qps=Q mode=M mr=MR held_back_seconds=H complete=true transport=T [provider=P]\n" +
			"With --protocol spead|vdif it sends the pattern as UDP packets, each carrying the bytes the receiver's placement rule\n" +
			"(the same --spead-*/--vdif-* flags as `ringcap recv`) puts it at, and the summary is\n" +
			"  send: bytes=N packets=P payload_bytes=B dropped_packets=D dropped_bytes=DB stop_heaps=H seconds=S gbps=G protocol=spead complete=true\n" +
			"(a SPEAD stream ends with one stream-stop heap, as spead2's senders end theirs, so that the receiver ends its observation).",
		Example: "  ringcap send --connect 198.18.0.2:18515 --qps 4 --mode write --bytes 1073741824 --seed 7\n" +
			"  ringcap send --connect 10.0.0.5:18515 --duration 30s --rate-gbps 10\n" +
			"  ringcap send --connect 10.0.0.5:18515 --file capture.raw\n" +
			"  ringcap send --connect 127.0.0.1:18515 --transport ofi --ofi-domain lo --bytes 1G --seed 7\n" +
			"  ringcap send --protocol spead --connect 10.0.0.5:7148 --bytes 32M --seed 7 --rate 20M --spead-timestamp-id 0x1600 --spead-timestamp-step 4096 --spead-heap-bytes 8K --spead-sync-time 1700000000 --spead-sample-rate 1712000000",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSend(cmd, o)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.connect, "connect", "", "receiver address HOST:PORT (required)")
	fs.IntVar(&o.qps, "qps", 0, fmt.Sprintf("RC queue pairs (1..%d; must match the receiver; default: the receiver's)", wire.MaxQPs))
	fs.StringVar(&o.mode, "mode", "", "transfer mode: send or write (must match the receiver; default: the receiver's)")
	fs.Uint64Var(&o.msgBytes, "msg-bytes", 0, "bytes per message (must match the receiver; default: the receiver's)")
	fs.IntVar(&o.txDepth, "tx-depth", 16, "send work requests in flight per queue pair")
	fs.IntVar(&o.postList, "post-list", 0, "work requests per post at most (0: all a queue pair can take; 1: one by one, as perftest does, which on software RDMA such as rxe keeps the kernel's network path from batching)")
	fs.Uint8Var(&o.ackTimeout, "ack-timeout", fabric.DefaultAckTimeout, "local ACK timeout exponent, 1..30: a queue pair retransmits after 4.096 µs × 2^N without an acknowledgement (18: about 1 s, as NCCL; perftest's 14 is 67 ms)")
	fs.Var((*byteSize)(&o.bytes), "bytes", "bytes to send (e.g. 1073741824 or 1G)")
	fs.DurationVar(&o.duration, "duration", 0, "send for this long (instead of --bytes)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the test pattern (default source)")
	fs.StringVarP(&o.file, "file", "f", "", "send this file instead of the pattern")
	fs.BoolVar(&o.noFill, "no-fill", false, "benchmark the transport: send the buffers unfilled (zeros), as perftest does")
	fs.Float64Var(&o.rateGbps, "rate-gbps", 0, "limit the rate to this many Gb/s (0: unlimited)")
	fs.DurationVar(&o.progress, "progress", 0, "progress interval (default: 200ms on a terminal, 5s otherwise)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	fs.BoolVar(&o.busyPoll, "busy-poll", false, "poll for completions instead of sleeping until one arrives (keeps a CPU busy, as perftest does; on software RDMA such as rxe it takes CPU from the data path)")
	fs.StringVar(&o.pinCPU, "pin-cpu", "auto", "CPUs for the threads that post work requests: auto (on a software RDMA device such as rxe, which needs each queue pair's doorbells rung from one CPU to keep its packets in order: one thread pinned where it starts, or with several threads the first CPUs the process may use; free otherwise), none (one unpinned thread), or CPU numbers, one per thread (e.g. 0,1)")
	fs.IntVar(&o.threads, "post-threads", 0, "threads that post work requests, each pinned to its own CPU and posting its own queue pairs (queue pair q from thread q mod N) (0: auto, one per CPU the process may use, up to --qps, on a software RDMA device such as rxe, where the posting CPU also carries the packets' receive and acknowledgement paths, also as a libfabric domain (--ofi-domain rxe0); 1 otherwise). With --transport ofi each thread also reads its endpoints' completion queues, which is what progresses libfabric's ofi_rxm")
	fs.StringVar(&o.headerFile, "header-file", "", "PSRDADA ASCII header whose keywords go into this observation's header (SOURCE, UTC_START, FREQ, ...)")
	fs.StringArrayVar(&o.headers, "header", nil, "set a keyword of this observation's header (KEY=VALUE, repeatable; after --header-file). They override the receiver's template; HDR_SIZE, OBS_OFFSET and RINGCAP_* are the receiver's (an error here, left out of --header-file), TRANSFER_SIZE is refused; UTC_START (YYYY-MM-DD-hh:mm:ss) replaces the receiver's time of acceptance")
	o.dev.add(c)
	o.fabric.add(c, os.Getenv)
	o.packets.add(fs)
	return c
}

func runSend(cmd *cobra.Command, o *sendOpts) error {
	if err := o.packets.check(cmd.Flags()); err != nil {
		return err
	}
	if o.packets.packet() {
		return runPacketSend(cmd, o)
	}
	errw := cmd.ErrOrStderr()
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := o.check(cmd.Flags().Changed("seed")); err != nil {
		return err
	}
	var mode wire.Mode // zero: the receiver's
	if o.mode != "" {
		m, err := wire.ParseMode(o.mode)
		if err != nil {
			return err
		}
		mode = m
	}
	hdr, dropped, err := senderHeader(o.headerFile, o.headers)
	if err != nil {
		return err
	}
	if len(dropped) > 0 {
		log.Info("Not sending the header file's keywords the receiver sets", "file", o.headerFile, "keys", strings.Join(dropped, ","))
	}
	cfg := sender.Config{Header: hdr, Mode: mode, QPs: o.qps, MsgBytes: o.msgBytes, TxDepth: o.txDepth, PostList: o.postList, AckTimeout: o.ackTimeout, Bytes: o.bytes,
		Duration: o.duration, RateBytesPerSecond: o.rateGbps * 1e9 / 8, BusyPoll: o.busyPoll, Log: log}
	closeSource, err := o.source(&cfg)
	if err != nil {
		return err
	}
	defer closeSource()
	fb, err := o.fabric.parse()
	if err != nil {
		return err
	}
	var dev endpoint.Request
	if fb.Transport != wire.TransportOFI {
		if dev, err = o.dev.request().WithEnv(os.Getenv); err != nil {
			return err
		}
	}
	tty := o.progressTo(&cfg, errw)
	res, err := sender.Run(cmd.Context(), sender.Stream{
		Connect: o.connect, Config: cfg, Device: dev, Roots: devices.HostRoots(), Fabric: fb, Domain: o.fabric.domain,
		Open: openSenderFabric(fb, o.connect, log), Posting: &sender.PostingPolicy{Pin: o.pinCPU, Threads: o.threads},
	})
	if tty && !o.quiet {
		outln(errw)
	}
	mr, modeName := "none", "none"
	if res.MRMode != 0 {
		mr = res.MRMode.String()
	}
	if res.Mode != 0 {
		modeName = res.Mode.String()
	}
	outf(cmd.OutOrStdout(), "send: bytes=%d seconds=%.3f gbps=%.3f qps=%d mode=%s mr=%s held_back_seconds=%.3f complete=%v%s\n",
		res.Bytes, res.Seconds, res.Gbps, res.QPs, modeName, mr, res.HeldBackSeconds, res.Complete && err == nil, fabricWords(res.Fabric))
	return err
}

// check refuses flag combinations that cannot work (seedSet: --seed was given).
func (o *sendOpts) check(seedSet bool) error {
	switch {
	case o.connect == "":
		return errors.New("--connect HOST:PORT is required")
	case o.file != "" && (seedSet || o.noFill):
		return errors.New("give at most one of --seed, --file and --no-fill")
	case o.bytes > 0 && o.duration > 0:
		return errors.New("give --bytes or --duration, not both")
	case o.ackTimeout == 0:
		// 0 is the verbs value for "no timeout": a queue pair would never retransmit.
		return errors.New("--ack-timeout 0: want an exponent of 1..30 (0 would never retransmit a lost packet)")
	}
	return nil
}

// source sets the stream's source (and, for a regular file without --bytes or
// --duration, its length); closeSource closes what it opened.
func (o *sendOpts) source(cfg *sender.Config) (closeSource func(), err error) {
	switch {
	case o.noFill:
		cfg.Source = sender.NoFillSource{}
	case o.file == "":
		cfg.Source = sender.PatternSource{Seed: o.seed}
	default:
		return sender.OpenFile(o.file, cfg)
	}
	return func() {}, nil
}
