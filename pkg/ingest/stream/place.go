package stream

import (
	"errors"

	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// The SPEAD items of heaps that carry no data: item descriptors and stream
// control (start, stop), numbered as SPEAD and spead2 number them.
const (
	DescriptorID    = spead.DescriptorID
	StreamControlID = 0x6
	// StreamStop is the stream control item's value in a heap that ends the
	// stream.
	StreamStop = 2
)

// placeSPEAD decodes and places a SPEAD packet, counting a rejection.
func (p *Pipeline) placeSPEAD(pkt []byte) (uint64, []byte, bool) {
	if err := spead.Decode(pkt, &p.sp); err != nil {
		p.asm.Malformed()
		return 0, nil, false
	}
	if ctrl, isCtrl := p.sp.Immediate(StreamControlID); isCtrl {
		// Stream control is never data, whatever else the heap carries
		// (placed by heap counter, every heap has a "timestamp").
		p.c.control.Add(1)
		if ctrl == StreamStop {
			p.c.stops.Add(1)
		}
		return 0, nil, false
	}
	pl, err := p.spl.Place(&p.sp)
	ts, hasTS := p.sp.Immediate(p.cfg.SPEAD.TimestampID)
	first, _ := p.spl.First()
	switch {
	case err == nil:
		if ts > p.c.newest.Load() {
			p.c.newest.Store(ts)
		}
		return pl.Offset, p.sp.Payload[pl.Skip:], true
	case errors.Is(err, spead.ErrDescriptorsOnly), !hasTS && p.speadDescriptors():
		p.c.control.Add(1)
	case !errors.Is(err, spead.ErrOutOfRange):
		p.asm.Malformed()
	case hasTS && ts < first:
		p.c.beforeStart.Add(1)
	default:
		p.c.outOfRange.Add(1)
	}
	return 0, nil, false
}

// speadDescriptors reports whether the packet is of a heap of item
// descriptors (item 0x5) rather than data.
func (p *Pipeline) speadDescriptors() bool {
	_, desc := p.sp.Lookup(DescriptorID)
	return desc
}

// placeVDIF decodes and places a VDIF frame, counting a rejection.
func (p *Pipeline) placeVDIF(pkt []byte) (uint64, []byte, bool) {
	if err := vdif.Decode(pkt, &p.vf); err != nil {
		p.asm.Malformed()
		return 0, nil, false
	}
	pl, err := p.vpl.Place(&p.vf)
	switch {
	case err == nil:
		if sec := uint64(vdif.EpochUnix(p.vf.RefEpoch)) + uint64(p.vf.Seconds); sec > p.c.newest.Load() {
			p.c.newest.Store(sec)
		}
		return pl.Offset, p.vf.Data, true
	case errors.Is(err, vdif.ErrInvalid):
		p.c.invalid.Add(1)
	case !errors.Is(err, vdif.ErrOutOfRange):
		p.asm.Malformed()
	default:
		first, _ := p.vpl.First()
		if vdif.EpochUnix(p.vf.RefEpoch)+int64(p.vf.Seconds) < first.Unix() {
			p.c.beforeStart.Add(1)
		} else {
			p.c.outOfRange.Add(1)
		}
	}
	return 0, nil, false
}
