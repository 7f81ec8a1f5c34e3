package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/ringwatch"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// OpenFabric opens the receiver's fabric on the chosen device over the
// ring's data blocks (registering them for RDMA), e.g. with
// verbsfabric.NewReceiver.
type OpenFabric func(dev fabric.DeviceConfig, ring *dada.Ring) (fabric.ReceiverFabric, error)

// Capture is everything one receiver run needs besides its command line.
type Capture struct {
	// Ring names the ring (Key); with Create, the whole Config makes it, and
	// Run destroys it on return. Without Create, Run waits up to Wait for it.
	Ring   dada.Config
	Create bool
	Wait   time.Duration
	// Drain is how long a run that created its ring and ended of itself (a
	// stop condition, not ctx) waits without any reader clearing a block for
	// the readers to read what it wrote, before it destroys the ring (0: it
	// destroys it at once).
	Drain time.Duration
	// Connect says how the ring's blocks are mapped (Contiguous: back to
	// back, so that one memory region can cover the ring).
	Connect        dada.ConnectOptions
	NewStyleHeader bool
	// Listen says where senders connect and who may (see
	// endpoint.ChooseListen).
	Listen endpoint.Listen
	// Device is what the flags ask for; the device plugin's environment
	// (Getenv, os.Getenv when nil) fills in the rest.
	Device endpoint.Request
	Getenv func(string) string
	// Roots is where the RDMA devices are discovered (rdma.DefaultRoots).
	Roots rdma.Roots
	// Receiver configures the engine; Run fills in the header ring's size.
	Receiver ReceiverConfig
	// Transport is the fabric Open opens (zero: verbs): with ofi no RDMA
	// device is chosen, the fabric opens its libfabric domain.
	Transport wire.Transport
	Open      OpenFabric
	// MetricsAddr serves /status and /metrics (empty: off); SummaryFile gets
	// the final status JSON (empty: none).
	MetricsAddr, SummaryFile string
	// Status is where Run reports (nil: a tracker of its own); a caller that
	// passes one can watch the run.
	Status *Tracker
	// ServeRing, when set, serves the ring in place of the RDMA receiver (a
	// packet-stream receiver, pkg/ingest/receiver): Run makes the ring, the
	// status server, the drain and the final state as for RDMA, and
	// ServeRing receives into it until a stop condition (nil) or ctx. The
	// RDMA fields (Listen, Device, Receiver, Transport, Open) are unused.
	ServeRing func(ctx context.Context, h *dada.HDU, t *Tracker, log *slog.Logger) error
}

// Run receives into the ring until a stop condition or ctx ends: it makes or
// waits for the ring, chooses the RDMA endpoint, opens the fabric, becomes
// the ring's writer and serves senders, reporting all along in its status
// (/status, /metrics, the summary file). It closes what it opened, and its
// final state says why it ended; an interrupt (ctx) is a clean stop.
func Run(ctx context.Context, c Capture) (err error) {
	log := c.Receiver.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := c.Status
	if t == nil {
		t = NewTracker()
	}
	if c.ServeRing == nil {
		t.Update(func(s *statusdoc.Status) {
			s.QueuePairs, s.TransferMode, s.BusyPoll = c.Receiver.QPs, c.Receiver.Mode.String(), c.Receiver.BusyPoll
		})
	}
	stop, err := serveStatus(t, c.MetricsAddr, log)
	if err != nil {
		return err
	}
	defer stop()
	defer func() { err = finish(ctx, t, c.SummaryFile, log, err) }()
	h, release, err := openRing(ctx, c, log)
	if err != nil {
		return err
	}
	defer func() {
		if c.Create && c.Drain > 0 && ctx.Err() == nil {
			if err == nil { // the operator shows a Finished receiver as its readers draining the ring
				t.SetState(statusdoc.StateFinished, "stop condition reached; waiting for the readers to read the ring")
			}
			err = errors.Join(err, ring.DrainReaders(ctx, h, c.Drain, log))
		}
		err = errors.Join(err, release())
	}()
	t.Update(func(s *statusdoc.Status) {
		s.Ring = statusdoc.Ring{Key: h.Key().String(), Ready: true, Blocks: h.Data.NBufs(), BlockBytes: h.Data.BufSize(), Readers: h.Data.Readers()}
	})
	if err := t.WatchRing(ringwatch.NewWatcher(h.Snapshot)); err != nil {
		return err
	}
	if c.ServeRing != nil {
		return c.ServeRing(ctx, h, t, log)
	}
	return serve(ctx, c, h, t, log)
}

// serve chooses the endpoint, opens the fabric, becomes the writer and
// serves senders on the ring h.
func serve(ctx context.Context, c Capture, h *dada.HDU, t *Tracker, log *slog.Logger) error {
	// A template that cannot make a header fails now, not at the first sender.
	hdrs := c.Receiver.Header
	hdrs.Size = h.Header.BufSize()
	if err := hdrs.Check(); err != nil {
		return fmt.Errorf("ring %s: %w", h.Key(), err)
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	l := c.Listen
	// ofi opens its own domain; with listen-on rdma the device is chosen
	// all the same, for the address its endpoints bind to (verbs;ofi_rxm).
	l.NoDevice = c.Transport == wire.TransportOFI && l.On != endpoint.ListenRDMA
	ch, err := endpoint.ChooseListen(c.Roots, l, c.Device, getenv, log)
	if err != nil {
		return err
	}
	if c.Transport == wire.TransportOFI && l.On == endpoint.ListenRDMA {
		ch.Device.Node, _, _ = net.SplitHostPort(ch.Addr)
	}
	t.Update(func(s *statusdoc.Status) { s.Endpoint = statusEndpoint(ch) })
	watchLink(t, c.Roots, ch.RDMA, log)
	fab, err := c.Open(ch.Device, h.Data)
	if err != nil {
		return err
	}
	defer fabric.CloseLogged(log, "the receiver's fabric", fab)
	_, _, mri := fab.Registration()
	fb := fab.Fabric()
	t.Update(func(s *statusdoc.Status) {
		s.MemoryRegistration, s.Transport, s.Provider = statusRegistration(mri), fb.Transport.String(), fb.Provider
	})
	w, err := h.LockWrite(ctx, dada.WriterOptions{NewStyleHeader: c.NewStyleHeader})
	if err != nil {
		return fmt.Errorf("become the writer of ring %s: %w", h.Key(), err)
	}
	cfg := c.Receiver
	cfg.Header.Size, cfg.Senders = h.Header.BufSize(), ch.Senders
	rx, err := NewReceiver(cfg, RingGeometryOf(h.Data), DadaWriter{W: w}, fab, t)
	if err != nil {
		return errors.Join(err, w.Close())
	}
	return errors.Join(listenAndServe(ctx, rx, ch.Addr, t), closeWriter(ctx, w, log))
}

// stopGrace is how long, after a stop (SIGINT/SIGTERM), ending the open
// observation may wait for the readers to free a block.
const stopGrace = 5 * time.Second

// closeWriter ends the open observation and unlocks the ring. After a stop
// (ctx done) it waits at most stopGrace for the readers, so a stop never
// hangs on readers that hold every block: the observation is then left
// without its end (a reader sees no more data), which the log says.
func closeWriter(ctx context.Context, w *dada.Writer, log *slog.Logger) error {
	if ctx.Err() == nil {
		return w.Close()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
	defer cancel()
	err := w.CloseContext(cctx)
	if err != nil && cctx.Err() != nil {
		log.Warn("Stopped without ending the open observation: the readers held the ring's blocks", "waited", stopGrace.String(), "err", err)
		return nil
	}
	return err
}

// listenAndServe listens for senders on addr and serves them; an interrupt
// (ctx) is a clean stop.
func listenAndServe(ctx context.Context, rx *Receiver, addr string, t *Tracker) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for senders on %s: %w", addr, err)
	}
	t.Update(func(s *statusdoc.Status) {
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

// serveStatus serves the tracker's /status and /metrics on addr (none when
// addr is empty); stop shuts the server down.
func serveStatus(t *Tracker, addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: t.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("Serving status and metrics", "address", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// finish leaves the final state (why the run ended) and the summary file;
// it returns err, or the summary's failure when err is nil.
func finish(ctx context.Context, t *Tracker, summary string, log *slog.Logger, err error) error {
	switch {
	case err != nil:
		t.SetState(statusdoc.StateFailed, err.Error())
	case ctx.Err() != nil:
		t.SetState(statusdoc.StateFinished, "stopped by signal")
	default:
		t.SetState(statusdoc.StateFinished, "stop condition reached")
	}
	if summary == "" {
		return err
	}
	if werr := t.WriteSummary(summary); werr != nil {
		log.Error("Writing the summary failed", "file", summary, "err", werr)
		if err == nil {
			return werr
		}
	}
	return err
}

// openRing creates the ring (Create) or waits for it, and connects to it;
// release closes it and destroys what Run created.
func openRing(ctx context.Context, c Capture, log *slog.Logger) (*dada.HDU, func() error, error) {
	var created *dada.HDU
	if c.Create {
		var err error
		if created, err = dada.Create(c.Ring); err != nil {
			return nil, nil, err
		}
		log.Info("Created ring", "key", c.Ring.Key.String(), "nbufs", c.Ring.NBufs, "bufsz", c.Ring.BufSize, "readers", c.Ring.Readers)
	}
	destroy := func() error {
		if created == nil {
			return nil
		}
		return created.Destroy()
	}
	h, err := dada.ConnectWait(ctx, c.Ring.Key, c.Connect, c.Wait)
	if err != nil {
		return nil, nil, errors.Join(err, destroy())
	}
	return h, func() error {
		_ = h.Close()
		return destroy()
	}, nil
}

// watchLink adds the counters of the port the receiver uses, counted from now, to its
// metrics (ringcap_recv_link_increase_total). Counters that cannot be read leave the
// capture as it is: they are for watching, and a node's totals are the device plugin's.
func watchLink(t *Tracker, roots rdma.Roots, ch *endpoint.Chosen, log *slog.Logger) {
	if ch == nil {
		return
	}
	d, err := linkmetrics.NewDeltaCollector(roots, linkmetrics.Port{Device: ch.Device, Port: ch.Port})
	switch {
	case err != nil:
	case d.Len() == 0:
		// A pod in a network namespace of its own sees the device's "compat" sysfs entry,
		// which has neither counters nor hw_counters.
		err = errors.New("the port has no counters here (a network namespace other than the node's sees none); the device plugin or DRA driver exports this capture's, ringcap_capture_link_increase_total, and the node's, ringcap_link_counter_total")
	default:
		err = t.Register(d)
	}
	if err != nil {
		log.Warn("the link counters of the port are not exported", "device", ch.Device, "port", ch.Port, "error", err)
		return
	}
	log.Info("Exporting the port's link counters from now (ringcap_recv_link_increase_total)", "device", ch.Device, "port", ch.Port, "counters", d.Len())
}
