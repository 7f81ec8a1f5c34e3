package stream

import (
	"context"

	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// Source delivers a stream's packets: Run calls handle with each packet, one
// at a time from one goroutine, until ctx ends or the source fails. The
// packet's bytes are only valid during the call. The socket layer implements
// it; tests use an in-memory source.
type Source interface {
	Run(ctx context.Context, handle func(pkt []byte)) error
}

// Pipeline decodes, places and assembles the packets of one observation of
// one stream. Handle and Close are called from one goroutine; Snapshot from
// any.
type Pipeline struct {
	cfg   Config
	asm   *assemble.Assembler
	sp    spead.Packet
	spl   *spead.Placer
	vf    vdif.Frame
	vpl   *vdif.Placer
	begun bool   // a packet was placed
	hdr   []byte // the observation's header, built then
	err   error  // the pipeline failed: every later Handle returns it
	c     counters
}

// New starts a pipeline for cfg into the ring of acfg (its Header is set to
// the pipeline's: built from the stream's first packet placed). ctx ends the
// assembler's ring worker as assemble.New says.
func New(ctx context.Context, cfg Config, acfg assemble.Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg}
	if err := p.placers(); err != nil {
		return nil, err
	}
	acfg.Header = p.header
	asm, err := assemble.New(ctx, acfg)
	if err != nil {
		return nil, err
	}
	p.asm = asm
	return p, nil
}

// placers makes the protocol's placer, started where cfg.Start says.
func (p *Pipeline) placers() error {
	var err error
	switch p.cfg.Protocol {
	case SPEAD:
		if p.spl, err = spead.NewPlacer(p.cfg.SPEAD); err == nil && p.cfg.Start.At {
			p.spl.Start(p.cfg.Start.Timestamp)
		}
	case VDIF:
		if p.vpl, err = vdif.NewPlacer(p.cfg.VDIF); err == nil && p.cfg.Start.At {
			p.vpl.Start(p.cfg.Start.Time)
		}
	}
	return err
}

// Handle decodes one packet, places it and writes its payload into the ring,
// or counts why not. It allocates nothing (but for the first packet placed,
// which builds the header). It returns an error only when the pipeline
// cannot go on: the ring failed, or the first packet placed cannot give the
// observation a header; Close ends it then.
func (p *Pipeline) Handle(pkt []byte) error {
	if p.err != nil {
		return p.err
	}
	p.c.packets.Add(1)
	var off uint64
	var payload []byte
	var ok bool
	if p.spl != nil {
		off, payload, ok = p.placeSPEAD(pkt)
	} else {
		off, payload, ok = p.placeVDIF(pkt)
	}
	if !ok {
		return nil
	}
	if !p.begun {
		if err := p.begin(); err != nil {
			return p.fail(err)
		}
	}
	if err := p.asm.Put(off, payload); err != nil {
		return p.fail(err)
	}
	return nil
}

// fail records the pipeline's failure; every later Handle returns it.
func (p *Pipeline) fail(err error) error {
	p.err = err
	return err
}

// Run hands the packets of src to Handle until src returns or the pipeline
// fails (which ends src's context). It returns the pipeline's error, else
// src's. It does not close the pipeline.
func (p *Pipeline) Run(ctx context.Context, src Source) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := src.Run(ctx, func(pkt []byte) {
		if p.Handle(pkt) != nil {
			cancel()
		}
	})
	if p.err != nil {
		return p.err
	}
	return err
}

// Close ends the observation (assemble.Assembler.Close: the open blocks are
// handed over, the last one partial). It is idempotent.
func (p *Pipeline) Close() error { return p.asm.Close() }
