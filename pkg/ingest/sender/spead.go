package sender

import (
	"math/bits"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// speadStream cuts the stream into heaps of the rule's heap size in slot
// order (heap index × channel groups + group), each heap into packets.
type speadStream struct {
	cfg      Config
	heap     uint64 // bytes per heap
	pkt      uint64 // payload bytes per packet
	perHeap  uint64 // packets per heap
	groups   uint64
	base     uint64 // timestamp of heap index 0
	obs      uint64 // the receiver's OBS_OFFSET for base: the pattern offset of heap slot 0
	sync     uint64
	rate     uint64
	payload  []byte
	nPackets uint64
}

func newSPEAD(c Config) *speadStream {
	r := c.Stream.SPEAD
	s := &speadStream{cfg: c, heap: r.HeapSize, pkt: c.PacketBytes, groups: r.Groups(), sync: c.SyncTime, rate: c.SampleRate}
	if s.pkt == 0 {
		s.pkt = DefaultPacketBytes
	}
	if s.heap == 0 {
		s.heap = s.pkt
	}
	s.pkt = min(s.pkt, s.heap)
	if s.sync == 0 {
		s.sync = uint64(c.now().Unix())
	}
	if s.rate == 0 {
		s.rate = 1e9
	}
	s.base = s.timeRate() // a whole second: OBS_OFFSET 0
	if c.Stream.Start.At {
		s.base = c.Stream.Start.Timestamp
	}
	s.obs = s.obsOffset()
	s.perHeap = (s.heap + s.pkt - 1) / s.pkt
	full, rem := c.Bytes/s.heap, c.Bytes%s.heap
	s.nPackets = full*s.perHeap + (rem+s.pkt-1)/s.pkt
	s.payload = make([]byte, s.pkt)
	return s
}

func (s *speadStream) count() uint64 { return s.nPackets }

// packet is packet i: heap slot i/perHeap, at heap offset (i%perHeap)×pkt.
func (s *speadStream) packet(i uint64) ([]byte, uint64) {
	slot, off := i/s.perHeap, (i%s.perHeap)*s.pkt
	at := slot*s.heap + off
	n := min(s.pkt, s.heap-off, s.cfg.Bytes-at)
	pl := s.payload[:n]
	pattern.Fill(pl, s.cfg.Seed, s.obs+at)
	return ingesttest.SPEADHeap(48, s.heapCounter(slot), s.heap, off, pl, s.items(slot)...), n
}

// timeRate is the sample rate the receiver uses: the rule's, else the one
// sent in the sample rate item.
func (s *speadStream) timeRate() uint64 {
	if r := s.cfg.Stream.SPEADTime.SampleRate; r != 0 {
		return r
	}
	return s.rate
}

// obsOffset is the OBS_OFFSET the receiver gives a stream starting at base:
// the bytes since the last whole second, (base mod rate) × bytes per
// timestamp step / step.
func (s *speadStream) obsOffset() uint64 {
	step := s.cfg.Stream.SPEAD.TimestampStep
	over, perStep := bits.Mul64(s.groups, s.heap)
	hi, lo := bits.Mul64(s.base%s.timeRate(), perStep)
	if over != 0 || hi >= step {
		return 0 // the receiver refuses such a stream
	}
	q, _ := bits.Div64(hi, lo, step)
	return q
}

// heapCounter is the heap's counter: its timestamp when the rule places by
// heap counter, else slot+1.
func (s *speadStream) heapCounter(slot uint64) uint64 {
	if s.cfg.Stream.SPEAD.TimestampID == spead.HeapCounterID {
		return s.timestamp(slot)
	}
	return slot + 1
}

func (s *speadStream) timestamp(slot uint64) uint64 {
	return s.base + slot/s.groups*s.cfg.Stream.SPEAD.TimestampStep
}

// items are the rule's items of heap slot: timestamp, channel, sync time,
// sample rate.
func (s *speadStream) items(slot uint64) []spead.Item {
	r, t := s.cfg.Stream.SPEAD, s.cfg.Stream.SPEADTime
	var its []spead.Item
	if r.TimestampID != spead.HeapCounterID {
		its = append(its, ingesttest.Imm(r.TimestampID, s.timestamp(slot)))
	}
	if r.ChannelID != 0 {
		its = append(its, ingesttest.Imm(r.ChannelID, r.Channels.First+slot%s.groups*r.Channels.Step))
	}
	if t.SyncTimeID != 0 {
		its = append(its, ingesttest.Imm(t.SyncTimeID, s.sync))
	}
	if t.SampleRateID != 0 {
		its = append(its, ingesttest.Imm(t.SampleRateID, s.rate))
	}
	return its
}

// end is the stream-stop heap that ends the stream, as spead2's senders end
// theirs: a heap of the stream control item alone, after every data heap.
func (s *speadStream) end() []byte {
	slots := (s.cfg.Bytes + s.heap - 1) / s.heap
	return ingesttest.SPEADHeap(48, s.heapCounter(slots), 0, 0, nil, ingesttest.Imm(stream.StreamControlID, stream.StreamStop))
}
