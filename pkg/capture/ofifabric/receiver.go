package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// blockMR is where ring block i lies: in mr, off bytes in.
type blockMR struct {
	mr  *ofi.MR
	off uint64
}

// Receiver is a fabric.ReceiverFabric over libfabric with the ring registered.
type Receiver struct {
	d      *ofi.Domain
	prov   wire.Fabric
	mode   fabric.MRMode // WholeRing or PerBlock
	reason string
	bytes  uint64
	mrs    []*ofi.MR
	blocks []blockMR
	lenMsg bool // write mode with length messages (see lengthMessages)
}

// NewReceiver opens the domain and registers the ring's data blocks by the
// shared rule (Auto: one region when the blocks are mapped back to back).
// log receives the registration's one-line summary (nil: log.Print).
func NewReceiver(cfg Config, ring fabric.Ring, mode fabric.MRMode, logf func(string)) (*Receiver, error) {
	region, contiguous, why := ring.Contiguous()
	chosen, reason, err := fabric.ChooseMRMode(mode, contiguous, why)
	if err != nil {
		return nil, fmt.Errorf("register the ring: %w", err)
	}
	d, err := openDomain(cfg)
	if err != nil {
		return nil, err
	}
	r := &Receiver{d: d, prov: fabricOf(d), mode: chosen, reason: reason, bytes: uint64(ring.NBufs()) * uint64(ring.BufSize()),
		lenMsg: lengthMessages(cfg, d.Info())}
	if err := r.register(ring, region); err != nil {
		_ = d.Close()
		return nil, err
	}
	line := fmt.Sprintf("Registered ring mode=%v regions=%d bytes=%d (%s) with libfabric provider %q domain %q mr_mode %v, environment %s",
		r.mode, len(r.mrs), r.bytes, r.reason, d.Info().Provider, d.Info().Domain, d.Info().MRMode, ofi.EnvInEffect())
	if logf == nil {
		log.Print(line)
	} else {
		logf(line)
	}
	return r, nil
}

// access lets the ring take sends (send mode) and writes (write mode).
const access = ofi.CapRecv | ofi.CapRemoteWrite

func (r *Receiver) register(ring fabric.Ring, region []byte) error {
	n, bs := ring.NBufs(), uint64(ring.BufSize())
	r.blocks = make([]blockMR, n)
	if r.mode == fabric.MRWholeRing {
		mr, err := r.d.RegisterMR(ring.BlockAddr(0), len(region), access)
		if err != nil {
			return fmt.Errorf("register ring mode=WholeRing (%d bytes): %w", len(region), err)
		}
		r.mrs = []*ofi.MR{mr}
		for i := range r.blocks {
			r.blocks[i] = blockMR{mr: mr, off: uint64(i) * bs}
		}
		return nil
	}
	for i := range r.blocks {
		mr, err := r.d.RegisterMR(ring.BlockAddr(i), int(bs), access)
		if err != nil {
			return fmt.Errorf("register ring mode=PerBlock: block %d of %d: %w", i, n, err)
		}
		r.mrs = append(r.mrs, mr)
		r.blocks[i] = blockMR{mr: mr}
	}
	return nil
}

// Open implements fabric.ReceiverFabric.
func (r *Receiver) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	if r.d == nil {
		return nil, errors.New("open endpoints: receiver fabric closed")
	}
	ep, err := newEndpoint(r.d, cfg, true)
	if err != nil {
		return nil, err
	}
	ep.rxBlock = func(b int, off, n uint64) ofi.Local {
		m := r.blocks[b]
		return m.mr.Local(m.off+off, int(n))
	}
	if r.d.Info().Mode&ofi.ModeRxCQData != 0 {
		ep.immRecv = r.blocks[0].mr.Local(0, 0)
		ep.postImm = true
	}
	if r.lenMsg {
		if ep.lenRx, err = newLenRx(r.d, cfg.QPs, cfg.RecvDepth); err != nil {
			_ = ep.Close()
			return nil, fmt.Errorf("open endpoints: %w", err)
		}
	}
	return ep, nil
}

// Registration implements fabric.ReceiverFabric: the regions as the sender
// addresses them (virtual addresses or offsets, as the domain says).
func (r *Receiver) Registration() (wire.MRMode, []wire.Region, fabric.Registered) {
	mode := wire.MRPerBlock
	if r.mode == fabric.MRWholeRing {
		mode = wire.MRWholeRing
	}
	regions := make([]wire.Region, len(r.mrs))
	for i, mr := range r.mrs {
		regions[i] = wire.Region{Addr: mr.RemoteAddr(0), Len: uint64(mr.Len()), RKey: mr.Key()}
	}
	return mode, regions, fabric.Registered{Mode: r.mode, Regions: len(r.mrs), Bytes: r.bytes, Reason: r.reason}
}

// Fabric implements fabric.ReceiverFabric.
func (r *Receiver) Fabric() wire.Fabric { return r.prov }

// Info is what the opened domain offers.
func (r *Receiver) Info() ofi.Info { return r.d.Info() }

// Close closes the domain and everything on it; idempotent.
func (r *Receiver) Close() error {
	if r.d == nil {
		return nil
	}
	err := r.d.Close()
	r.d = nil
	return err
}
