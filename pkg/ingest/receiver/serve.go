package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// StopGrace is how long, after a stop (ctx), handing over the open blocks
// and ending the data may wait for the readers to free a block.
const StopGrace = 5 * time.Second

// Serve receives the stream into the ring h until a stop condition (nil), a
// stop (ctx: nil) or a failure, reporting in t; it is pkg/capture.Run's
// ServeRing.
func (c Config) Serve(ctx context.Context, h *dada.HDU, t *status.Tracker, log *slog.Logger) error {
	scfg := c.Stream
	scfg.HeaderBytes = h.Header.BufSize()
	if err := scfg.CheckHeader(); err != nil {
		return fmt.Errorf("ring %s: %w", h.Key(), err)
	}
	if c.ReorderBlocks > h.Data.NBufs() {
		return fmt.Errorf("a reorder window of %d blocks does not fit ring %s of %d blocks", c.ReorderBlocks, h.Key(), h.Data.NBufs())
	}
	ucfg, reason, err := c.bindConfig(log)
	if err != nil {
		return err
	}
	populate(h, log)
	g, err := newGate(c.Listen.Allowed, ucfg, log)
	if err != nil {
		return err
	}
	r, err := udp.Open(ucfg)
	if err != nil {
		return fmt.Errorf("open the UDP sockets: %w", err)
	}
	defer func() { _ = r.Close() }()
	w, err := h.LockWrite(ctx, dada.WriterOptions{NewStyleHeader: c.NewStyleHeader})
	if err != nil {
		return fmt.Errorf("become the writer of ring %s: %w", h.Key(), err)
	}
	s := newSession(c, scfg, w, r, t, log)
	s.gate = g
	if err := t.Register(collector{s.counts}); err != nil {
		return errors.Join(err, w.Close())
	}
	t.SetLive(s.live)
	s.listening(r.Sockets(), reason)
	err = s.run(ctx, udpSource{r: r, shared: len(r.Sockets()) > 1, gate: g})
	return errors.Join(err, closeWriter(ctx, w, log))
}

// populate faults the data ring's pages in before the sockets open: a fresh ring's first
// pass would otherwise pay a page fault per page while packets arrive, and drop them.
func populate(h *dada.HDU, log *slog.Logger) {
	start := time.Now()
	if err := h.Data.Populate(); err != nil {
		log.Warn("The ring's pages are faulted in as packets arrive (packets may be dropped in its first pass)", "err", err)
		return
	}
	log.Info("Faulted in the ring's pages", "bytes", h.Data.NBufs()*h.Data.BufSize(), "seconds", time.Since(start).Seconds())
}

// closeWriter unlocks the ring; after a stop (ctx done) it waits at most
// StopGrace for the readers.
func closeWriter(ctx context.Context, w *dada.Writer, log *slog.Logger) error {
	if ctx.Err() == nil {
		return w.Close()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
	defer cancel()
	err := w.CloseContext(cctx)
	if err != nil && cctx.Err() != nil {
		log.Warn("Stopped without ending the open observation: the readers held the ring's blocks", "waited", StopGrace.String(), "err", err)
		return nil
	}
	return err
}

// bufferNote is what the status and the log say when a socket got a smaller
// receive buffer than asked for ("" when none did).
func bufferNote(socks []udp.SocketInfo) string {
	for _, s := range socks {
		var be *udp.BufferError
		if errors.As(s.BufferErr, &be) {
			return fmt.Sprintf("the kernel gave the sockets a smaller receive buffer than asked for, so packets may be dropped at high rates: %v", be)
		}
		if s.BufferErr != nil {
			return s.BufferErr.Error()
		}
	}
	return ""
}

// endpointDoc is the status's endpoint: the bound address and first port,
// and the multicast groups joined.
func endpointDoc(socks []udp.SocketInfo, reason string) statusdoc.Endpoint {
	e := statusdoc.Endpoint{AddressReason: reason} // no RDMA GID: gidIndex absent
	if len(socks) > 0 {
		e.Address, e.Port = socks[0].Local.Addr().String(), int(socks[0].Local.Port())
	}
	for _, s := range socks {
		for _, g := range s.Groups {
			if !slices.Contains(e.MulticastGroups, g.String()) {
				e.MulticastGroups = append(e.MulticastGroups, g.String())
			}
		}
	}
	return e
}
