package rc

import (
	"errors"
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Complete handles one work completion.
func (rv *Receives) Complete(wc fabric.Completion) error {
	if wc.Err != nil {
		var we *fabric.WCError
		if errors.As(wc.Err, &we) {
			return we
		}
		return &fabric.WCError{QP: wc.QP, Status: wc.Err.Error(), Recv: wc.Recv}
	}
	if !wc.Recv {
		return nil
	}
	rv.posted[wc.QP]--
	var sl uint64
	if rv.cfg.Mode == wire.ModeSend {
		sl = wc.ID
		if wc.Imm != uint32(sl) {
			return fmt.Errorf("%w: queue pair %d delivered slice %d into the slot of slice %d", wire.ErrProtocol, wc.QP, wc.Imm, sl)
		}
	} else {
		var err error
		if sl, err = rv.win.Resolve(wc.Imm); err != nil {
			return ProtocolError(err)
		}
		rv.consumed[wc.QP]++ // reposted after the batch, one call per queue pair
	}
	if rv.cfg.Mode == wire.ModeWrite {
		return rv.landWritten(wc.QP, sl, uint64(wc.Bytes))
	}
	if rv.cfg.Geometry.QP(sl) != wc.QP {
		return fmt.Errorf("%w: slice %d arrived on queue pair %d, expected %d", wire.ErrProtocol, sl, wc.QP, rv.cfg.Geometry.QP(sl))
	}
	if err := rv.win.Land(sl, uint64(wc.Bytes)); err != nil {
		return ProtocolError(err)
	}
	rv.qpc[wc.QP].Add(uint64(wc.Bytes))
	return nil
}

// landWritten lands what an immediate on queue pair q accounts for (write
// mode): the whole block travels on the queue pair that took it, and RC
// placed that queue pair's plain RDMA WRITEs into the block, whole slices
// from the first one not landed yet, before the immediate naming slice sl,
// which wrote n bytes of it, or none (n = 0) when sl itself went out plain
// and this ends the stream.
func (rv *Receives) landWritten(q int, sl, n uint64) error {
	seq := rv.cfg.Geometry.SliceBlock(sl)
	done, err := rv.win.LandedIn(seq)
	if err != nil {
		return ProtocolError(err)
	}
	from := seq*rv.cfg.Geometry.SlicesPerBlock() + done
	if sl < from {
		return fmt.Errorf("%w: queue pair %d named slice %d, which had already landed", wire.ErrProtocol, q, sl)
	}
	for x := from; x <= sl; x++ {
		k := n
		if x < sl || n == 0 {
			_, _, k = rv.cfg.Geometry.Slice(x)
		}
		if err := rv.win.Land(x, k); err != nil {
			return ProtocolError(err)
		}
		rv.qpc[q].Add(k)
	}
	return nil
}

// ProtocolError is data the window cannot place (placement.ErrPlacement):
// over RC, the sender broke the protocol.
func ProtocolError(err error) error {
	return fmt.Errorf("%w: %w", wire.ErrProtocol, err)
}
