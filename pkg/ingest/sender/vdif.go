package sender

import (
	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// vdifStream cuts the stream into frames: frame index f of thread k is slot
// f×threads + k, frame index f is second f/fps, frame number f%fps.
type vdifStream struct {
	cfg      Config
	payload  uint64
	threads  []uint16
	fps      uint64
	epoch    uint8
	second0  uint32 // seconds from the epoch of frame index 0
	data     []byte
	nPackets uint64
}

func newVDIF(c Config) *vdifStream {
	r := c.Stream.VDIF
	s := &vdifStream{cfg: c, payload: uint64(r.PayloadBytes), threads: r.ThreadIDs, fps: uint64(r.FramesPerSecond)}
	if s.payload == 0 {
		s.payload = DefaultPacketBytes
	}
	for k := range r.Threads {
		if len(r.ThreadIDs) == 0 {
			s.threads = append(s.threads, uint16(k))
		}
	}
	start := c.now().Unix()
	if c.Stream.Start.At {
		start = c.Stream.Start.Time.Unix()
	}
	for e := 63; e >= 0; e-- {
		if u := vdif.EpochUnix(uint8(e)); u != 0 && u <= start {
			s.epoch, s.second0 = uint8(e), uint32(start-u)
			break
		}
	}
	s.nPackets = (c.Bytes + s.payload - 1) / s.payload
	s.data = make([]byte, s.payload)
	return s
}

func (s *vdifStream) count() uint64 { return s.nPackets }

func (s *vdifStream) packet(i uint64) ([]byte, uint64) {
	t := uint64(len(s.threads))
	frame, k := i/t, i%t
	pattern.Fill(s.data, s.cfg.Seed, i*s.payload)
	h := vdif.Header{Seconds: s.second0 + uint32(frame/s.fps), RefEpoch: s.epoch, FrameNumber: uint32(frame % s.fps),
		BitsMinus1: 1, ThreadID: s.threads[k], StationID: 'R'<<8 | 'C'}
	return ingesttest.VDIF(h, s.data), s.payload
}
