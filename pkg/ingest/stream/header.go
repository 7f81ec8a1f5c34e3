package stream

import (
	"fmt"
	"math/bits"
	"strconv"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

// UTCStartStream is RINGCAP_UTC_START_SOURCE when UTC_START comes from the
// stream's own metadata (beside pkg/capture/obsheader's sender, template and
// first-byte).
const UTCStartStream = "stream"

// begin builds the observation's header at the first packet placed.
func (p *Pipeline) begin() error {
	var keys [][2]string
	var err error
	if p.spl != nil {
		keys, err = p.speadKeys()
	} else {
		keys = p.vdifKeys()
	}
	if err != nil {
		return err
	}
	p.begun = true
	hdr, err := p.build(keys)
	if err != nil {
		return err
	}
	p.hdr = hdr
	return nil
}

// header is the assembler's Header: the observation's header, or, when no
// packet was placed, one without the stream's metadata.
func (p *Pipeline) header() ([]byte, error) {
	if p.hdr != nil {
		return p.hdr, nil
	}
	return p.build(nil)
}

// build sets the receiver's keys (HDR_SIZE, OBS_OFFSET 0, RINGCAP_PROTOCOL,
// HDR_VERSION 1.0 when the template has none), then the stream's keys, over
// the template, and pads the header to the header block.
func (p *Pipeline) build(keys [][2]string) ([]byte, error) {
	hd := dada.NewHeader()
	if p.cfg.Template != nil {
		var err error
		if hd, err = dada.ParseHeader([]byte(p.cfg.Template.String())); err != nil {
			return nil, fmt.Errorf("stream: header template: %w", err)
		}
	}
	base := [][2]string{{"HDR_SIZE", strconv.Itoa(p.cfg.HeaderBytes)}, {"OBS_OFFSET", "0"},
		{"RINGCAP_PROTOCOL", string(p.cfg.Protocol)}}
	if _, ok := hd.Get("HDR_VERSION"); !ok {
		base = append(base, [2]string{"HDR_VERSION", "1.0"})
	}
	for _, kv := range append(base, keys...) {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("stream: set header keyword %s: %w", kv[0], err)
		}
	}
	b, err := hd.Bytes(p.cfg.HeaderBytes)
	if err != nil {
		return nil, fmt.Errorf("stream: observation header: %w", err)
	}
	return b, nil
}

// speadKeys are a SPEAD stream's keys: the time of its first timestamp t0
// is SyncTime + t0/SampleRate; UTC_START is its whole second and OBS_OFFSET
// the stream's bytes from that second to t0 (rounded down when t0 is not on
// a byte), so that UTC_START + OBS_OFFSET/BYTES_PER_SECOND is t0.
func (p *Pipeline) speadKeys() ([][2]string, error) {
	sync, err := p.speadValue(p.cfg.SPEADTime.SyncTime, p.cfg.SPEADTime.SyncTimeID, "sync time")
	if err != nil {
		return nil, err
	}
	rate, err := p.speadValue(p.cfg.SPEADTime.SampleRate, p.cfg.SPEADTime.SampleRateID, "sample rate")
	if err != nil {
		return nil, err
	}
	if rate == 0 {
		return nil, fmt.Errorf("stream: SPEAD sample rate item 0x%x is 0", p.cfg.SPEADTime.SampleRateID)
	}
	t0, _ := p.spl.First()
	r := p.cfg.SPEAD
	overflow, perStep := bits.Mul64(r.Groups(), p.spl.HeapSize()) // bytes per TimestampStep
	hi, lo := bits.Mul64(t0%rate, perStep)
	if overflow != 0 || hi >= r.TimestampStep {
		return nil, fmt.Errorf("stream: OBS_OFFSET of SPEAD timestamp %d overflows 64 bits", t0)
	}
	offset, _ := bits.Div64(hi, lo, r.TimestampStep)
	bps := float64(rate) * float64(perStep) / float64(r.TimestampStep)
	utc := time.Unix(int64(sync+t0/rate), 0).UTC()
	return [][2]string{
		{"UTC_START", utc.Format(dada.UTCStartLayout)}, {"RINGCAP_UTC_START_SOURCE", UTCStartStream},
		{"OBS_OFFSET", strconv.FormatUint(offset, 10)}, {"BYTES_PER_SECOND", strconv.FormatFloat(bps, 'g', -1, 64)},
		{"RINGCAP_SPEAD_TIMESTAMP", strconv.FormatUint(t0, 10)}, {"RINGCAP_SPEAD_SYNC_TIME", strconv.FormatUint(sync, 10)},
		{"RINGCAP_SPEAD_SAMPLE_RATE", strconv.FormatUint(rate, 10)},
	}, nil
}

// speadValue is the user's value when given, else the immediate item id's in
// the first packet placed.
func (p *Pipeline) speadValue(given uint64, id uint32, what string) (uint64, error) {
	if given != 0 {
		return given, nil
	}
	if v, ok := p.sp.Immediate(id); ok {
		return v, nil
	}
	return 0, fmt.Errorf("stream: SPEAD %s: the first packet placed (heap %d) has no immediate item 0x%x", what, p.sp.HeapCounter, id)
}

// vdifKeys are a VDIF stream's keys, from its first frame placed: UTC_START
// is the first second (the frames' reference epoch plus seconds), at stream
// byte 0.
func (p *Pipeline) vdifKeys() [][2]string {
	f := &p.vf
	first, _ := p.vpl.First()
	ndim := "1"
	if f.Complex {
		ndim = "2"
	}
	bps := uint64(p.cfg.VDIF.FramesPerSecond) * uint64(p.cfg.VDIF.ThreadCount()) * p.vpl.PayloadBytes()
	return [][2]string{
		{"UTC_START", first.Format(dada.UTCStartLayout)}, {"RINGCAP_UTC_START_SOURCE", UTCStartStream},
		{"OBS_OFFSET", "0"}, {"BYTES_PER_SECOND", strconv.FormatUint(bps, 10)},
		{"NBIT", strconv.Itoa(f.BitsPerSample())}, {"NCHAN", strconv.Itoa(f.Channels())}, {"NDIM", ndim},
		{"RINGCAP_VDIF_STATION", station(f.StationID)},
		{"RINGCAP_VDIF_THREADS", strconv.Itoa(p.cfg.VDIF.ThreadCount())},
		{"RINGCAP_VDIF_FRAMES_PER_SECOND", strconv.FormatUint(uint64(p.cfg.VDIF.FramesPerSecond), 10)},
	}
}

// station is a VDIF station ID as its two ASCII characters when both are
// letters or digits (the specification's convention), else as a number.
func station(id uint16) string {
	a, b := byte(id>>8), byte(id)
	if isAlnum(a) && isAlnum(b) {
		return string([]byte{a, b})
	}
	return strconv.Itoa(int(id))
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}
