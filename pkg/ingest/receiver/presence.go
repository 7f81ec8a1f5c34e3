package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/presence"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
)

// PresenceConfig is the presence ring (pkg/ingest/presence): one record per
// data block, in order, in a second ring beside the data ring. It has as many
// reader slots as the data ring, and the receiver waits for its readers as
// for the data ring's: each reader slot must read both rings.
type PresenceConfig struct {
	// Key is the presence ring's key; 0: no presence ring.
	Key dada.Key
	// Granule is the bytes each bit of a record stands for; 0: the VDIF rule's
	// data array when it gives one, else presence.DefaultGranule.
	Granule uint64
	// Create makes the ring (and destroys it at the end), as the data ring's
	// Create; without it the receiver waits up to Wait for it.
	Create bool
	Wait   time.Duration
	// Lock locks the ring in memory (SHM_LOCK), as the data ring's Lock.
	Lock bool
	// Drain is how long, after a stop condition, the receiver waits for the
	// presence ring's readers without any clearing a block before it
	// destroys the ring (0: not at all), as the data ring's Drain.
	Drain time.Duration
}

// granule is the presence granule for the stream s.
func (p PresenceConfig) granule(s stream.Config) uint64 {
	switch {
	case p.Granule > 0:
		return p.Granule
	case s.Protocol == stream.VDIF && s.VDIF.PayloadBytes > 0:
		return uint64(s.VDIF.PayloadBytes)
	}
	return presence.DefaultGranule
}

// ServeRing is Serve with the presence ring when Presence.Key is set: it
// makes (or waits for) the presence ring beside the data ring h, serves, then
// ends the presence ring's data, waits for its readers (Drain) and destroys
// it (Create). It is pkg/capture.Run's ServeRing.
func (c Config) ServeRing(ctx context.Context, h *dada.HDU, t *status.Tracker, log *slog.Logger) error {
	if c.Presence.Key == 0 {
		return c.Serve(ctx, h, t, log)
	}
	pw, err := c.openPresence(ctx, h, log)
	if err != nil {
		return err
	}
	c.presence = pw
	err = c.Serve(ctx, h, t, log)
	return errors.Join(err, pw.close(ctx, err == nil, log))
}

// openPresence makes or waits for the presence ring of the data ring h and
// becomes its writer.
func (c Config) openPresence(ctx context.Context, h *dada.HDU, log *slog.Logger) (*presenceWriter, error) {
	p := c.Presence
	pr := presence.Ring{DataKey: h.Key(), DataBlock: uint64(h.Data.BufSize()), Granule: p.granule(c.Stream), HeaderSize: h.Header.BufSize()}
	if p.Key == h.Key() || p.Key == h.Key()+1 || p.Key+1 == h.Key() {
		return nil, fmt.Errorf("presence ring %s: its key or its header ring's is ring %s's or its header ring's", p.Key, h.Key())
	}
	if pr.DataBlock%pr.Granule != 0 {
		log.Warn("The presence granule does not divide the block size: granules do not align to packets across blocks", "granule", pr.Granule, "blockBytes", pr.DataBlock)
	}
	pw := &presenceWriter{ring: pr, drain: p.Drain}
	if p.Create {
		cfg := dada.Config{Key: p.Key, NBufs: uint64(h.Data.NBufs()), BufSize: pr.BlockBytes(), HeaderBufSize: uint64(pr.HeaderSize),
			Readers: h.Data.Readers(), Lock: p.Lock}
		var err error
		if pw.created, err = dada.Create(cfg); err != nil {
			return nil, fmt.Errorf("presence ring: %w", err)
		}
		log.Info("Created presence ring", "key", p.Key.String(), "nbufs", cfg.NBufs, "bufsz", cfg.BufSize, "readers", cfg.Readers, "granule", pr.Granule)
	}
	if err := pw.connect(ctx, p); err != nil {
		return nil, errors.Join(err, pw.release())
	}
	return pw, nil
}

// presenceWriter writes the presence records of an observation into the
// presence ring, from the assembler's goroutine.
type presenceWriter struct {
	ring    presence.Ring
	drain   time.Duration
	created *dada.HDU // the ring this run made, destroyed at the end
	h       *dada.HDU
	w       *dada.Writer
	hdr     []byte // the data ring's header, kept until the first record
	begun   bool   // the presence header is in the ring
	err     error  // the first failure: no record is written after it
}

// connect attaches to the ring, checks its blocks hold a record and locks it
// for writing.
func (p *presenceWriter) connect(ctx context.Context, c PresenceConfig) error {
	h, err := dada.ConnectWait(ctx, c.Key, dada.ConnectOptions{}, c.Wait)
	if err != nil {
		return fmt.Errorf("presence ring: %w", err)
	}
	p.h = h
	if got, want := uint64(h.Data.BufSize()), p.ring.BlockBytes(); got < want {
		return fmt.Errorf("presence ring %s: blocks of %d bytes, too small for a record of %d (granule %d, data blocks of %d bytes)",
			c.Key, got, want, p.ring.Granule, p.ring.DataBlock)
	}
	if p.w, err = h.LockWrite(ctx, dada.WriterOptions{}); err != nil {
		return fmt.Errorf("become the writer of presence ring %s: %w", c.Key, err)
	}
	return nil
}

// release closes and destroys what openPresence made.
func (p *presenceWriter) release() error {
	var errs []error
	if p.h != nil {
		errs = append(errs, p.h.Close())
	}
	if p.created != nil {
		errs = append(errs, p.created.Destroy())
	}
	return errors.Join(errs...)
}

// close ends the presence ring's observation, waits for its readers after a
// stop condition (ok, ctx not done) and releases the ring.
func (p *presenceWriter) close(ctx context.Context, ok bool, log *slog.Logger) error {
	err := p.err
	if p.err == nil && p.hdr != nil && !p.begun { // an observation without blocks: its header, then its end
		err = p.begin(ctx)
	}
	err = errors.Join(err, closeWriter(ctx, p.w, log))
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Warn("Stopped without ending the presence ring's observation: its readers held its blocks", "err", err)
		err = nil
	}
	if err == nil && ok && p.created != nil && p.drain > 0 && ctx.Err() == nil {
		err = ring.DrainReaders(ctx, p.h, p.drain, log)
	}
	return errors.Join(err, p.release())
}
