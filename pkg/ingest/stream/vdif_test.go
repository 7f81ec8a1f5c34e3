package stream

import (
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// A VDIF stream of 2 threads: 4 frames per second of 1024-byte data arrays,
// 2-bit real samples in 4 channels, station "Ef", from second 1000 of the
// 2026-01-01 reference epoch (52).
const (
	fps         = 4
	frameBytes  = 1024
	seconds     = 3
	firstSecond = 1000
	epoch       = 52
)

var threadIDs = []uint16{3, 7}

// vdifFrame is frame fn of second s (from firstSecond) of thread index k: its
// data are stream bytes ((s*fps+fn)*2+k)*frameBytes on of the pattern.
func vdifFrame(s, fn, k int) []byte {
	off := uint64(((s*fps+fn)*2 + k) * frameBytes)
	h := vdif.Header{Seconds: uint32(firstSecond + s), RefEpoch: epoch, FrameNumber: uint32(fn), Log2Channels: 2,
		BitsMinus1: 1, ThreadID: threadIDs[k], StationID: 'E'<<8 | 'f'}
	return ingesttest.VDIF(h, ingesttest.Pattern(off, frameBytes))
}

// vdifStream is every frame of seconds seconds from second s0, in order.
func vdifStream(s0 int) [][]byte {
	var out [][]byte
	for s := s0; s < seconds; s++ {
		for fn := range fps {
			for k := range 2 {
				out = append(out, vdifFrame(s, fn, k))
			}
		}
	}
	return out
}

// invalid is frame b flagged invalid by its sender.
func invalid(b []byte) []byte {
	b = append([]byte(nil), b...)
	b[3] |= 0x80
	return b
}

// A shuffled VDIF stream of 2 threads with a dropped frame, a duplicate, a
// late copy, a frame flagged invalid, a malformed frame and an unknown thread lands in
// place, the gaps zero-filled, every frame counted.
func TestVDIFStream(t *testing.T) {
	frames := vdifStream(0)
	frames[13] = invalid(frames[13])               // s=1, fn=2, thread 7: stream bytes 13312..14335
	frames = append(frames[:6], frames[7:]...)     // drop s=0, fn=3, thread 3: stream bytes 6144..7167
	frames = append(frames, frames[20], frames[0]) // a duplicate, and one of the first block, handed over by then: late
	shuffle(frames, 8, 2)
	unknown := vdif.Header{Seconds: firstSecond, RefEpoch: epoch, Log2Channels: 2, BitsMinus1: 1, ThreadID: 9}
	frames = append(frames,
		vdifFrame(1, 1, 0)[:100],                           // malformed: shorter than its frame length
		ingesttest.VDIF(unknown, make([]byte, frameBytes)), // out of range
	)
	cfg := Config{Protocol: VDIF, VDIF: vdif.Rule{FramesPerSecond: fps, ThreadIDs: threadIDs}, Template: template(t)}
	got := observe(t, cfg, 4, 4096, 3, frames)
	checkData(t, got.data, seconds*fps*2*frameBytes, 0, [][2]int{{6144, 7168}, {13312, 14336}})
	checkHeader(t, got.hdr, map[string]string{
		"HDR_VERSION": "1.0", "SOURCE": "J0437-4715", "TELESCOPE": "MeerKAT", "NPOL": "2", "HDR_SIZE": "4096",
		"RINGCAP_PROTOCOL": "vdif", "UTC_START": "2026-01-01-00:16:40", "RINGCAP_UTC_START_SOURCE": "stream",
		"OBS_OFFSET": "0", "BYTES_PER_SECOND": "8192", "NBIT": "2", "NCHAN": "4", "NDIM": "1",
		"RINGCAP_VDIF_STATION": "Ef", "RINGCAP_VDIF_THREADS": "2", "RINGCAP_VDIF_FRAMES_PER_SECOND": "4",
	})
	want := Counters{Packets: 27, PlacedBytes: 22 * frameBytes, Received: 22, Late: 1, Duplicate: 1, Malformed: 1, Invalid: 1, OutOfRange: 1,
		Newest: uint64(vdif.EpochUnix(epoch)) + firstSecond + seconds - 1}
	checkCounts(t, got.counts, want, 2*frameBytes, 6)
}

// A VDIF observation that starts at a given second counts the frames before
// it, arriving before and after the first frame placed, and writes none of
// them.
func TestVDIFStartAtTime(t *testing.T) {
	frames := vdifStream(0)[1:] // second 0 without its first frame: 7 frames
	start := time.Unix(vdif.EpochUnix(epoch)+firstSecond+1, 0)
	cfg := Config{Protocol: VDIF, VDIF: vdif.Rule{FramesPerSecond: fps, ThreadIDs: threadIDs}, Start: Start{At: true, Time: start}}
	got := observe(t, cfg, 4, 4096, 2, append(frames[7:], frames[:7]...))
	checkData(t, got.data, (seconds-1)*fps*2*frameBytes, fps*2*frameBytes, nil)
	checkHeader(t, got.hdr, map[string]string{"UTC_START": "2026-01-01-00:16:41", "OBS_OFFSET": "0", "HDR_VERSION": "1.0"})
	want := Counters{Packets: 23, PlacedBytes: 16 * frameBytes, Received: 16, BeforeStart: 7,
		Newest: uint64(vdif.EpochUnix(epoch)) + firstSecond + seconds - 1}
	checkCounts(t, got.counts, want, 0, 4)
}
