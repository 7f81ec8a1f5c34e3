package stream

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/dada"
)

// UTCStartStream is RINGCAP_UTC_START_SOURCE when UTC_START comes from the
// stream's own metadata (beside pkg/capture/obsheader's sender, template and
// first-byte).
const UTCStartStream = "stream"

// begin builds the observation's header at the first packet placed.
func (p *Pipeline) begin() error {
	var keys [][2]string
	if p.spl != nil {
		m, err := p.speadMeta()
		if err != nil {
			return err
		}
		keys = m.keys()
	} else {
		keys = p.vdifMeta().keys()
	}
	p.begun = true
	hdr, err := buildHeader(p.cfg, keys)
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
	return buildHeader(p.cfg, nil)
}

// buildHeader sets the receiver's keys (HDR_SIZE, OBS_OFFSET 0,
// RINGCAP_PROTOCOL, HDR_VERSION 1.0 when the template has none), then the
// stream's keys, over cfg's template, and pads the header to the header
// block.
func buildHeader(cfg Config, keys [][2]string) ([]byte, error) {
	hd := dada.NewHeader()
	if cfg.Template != nil {
		var err error
		if hd, err = dada.ParseHeader([]byte(cfg.Template.String())); err != nil {
			return nil, fmt.Errorf("stream: header template: %w", err)
		}
	}
	base := [][2]string{{"HDR_SIZE", strconv.Itoa(cfg.HeaderBytes)}, {"OBS_OFFSET", "0"},
		{"RINGCAP_PROTOCOL", string(cfg.Protocol)}}
	if _, ok := hd.Get("HDR_VERSION"); !ok {
		base = append(base, [2]string{"HDR_VERSION", "1.0"})
	}
	for _, kv := range append(base, keys...) {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("stream: set header keyword %s: %w", kv[0], err)
		}
	}
	if hd.Len() > cfg.HeaderBytes {
		return nil, fmt.Errorf("stream: the observation header takes %d bytes, more than the %d-byte header block: %w",
			hd.Len(), cfg.HeaderBytes, headerrules.ErrTooLarge)
	}
	return hd.Bytes(cfg.HeaderBytes)
}

// CheckHeader checks, before any packet, that the header the pipeline will
// build fits the header block whatever the stream's values (each at its
// widest), so that a receiver refuses a template too large at its start.
func (c Config) CheckHeader() error {
	if err := c.Validate(); err != nil {
		return err
	}
	var keys [][2]string
	if c.Protocol == SPEAD {
		keys = speadMeta{utc: time.Unix(0, 0), offset: math.MaxUint64, bps: -math.MaxFloat64,
			t0: math.MaxUint64, sync: math.MaxUint64, rate: math.MaxUint64}.keys()
	} else {
		keys = vdifMeta{first: time.Unix(0, 0), bps: math.MaxUint64, nbit: 32, nchan: 1 << 31, complex: true,
			station: math.MaxUint16, threads: 1024, fps: 1<<24 - 1}.keys()
	}
	_, err := buildHeader(c, keys)
	return err
}

// speadMeta is what a SPEAD stream's header says: the time of its first
// timestamp t0 is sync + t0/rate; utc is its whole second and offset the
// stream's bytes from that second to t0 (rounded down when t0 is not on a
// byte), so that UTC_START + OBS_OFFSET/BYTES_PER_SECOND is t0.
type speadMeta struct {
	utc            time.Time
	offset         uint64
	bps            float64
	t0, sync, rate uint64
}

func (m speadMeta) keys() [][2]string {
	return [][2]string{
		{"UTC_START", m.utc.UTC().Format(dada.UTCStartLayout)}, {"RINGCAP_UTC_START_SOURCE", UTCStartStream},
		{"OBS_OFFSET", strconv.FormatUint(m.offset, 10)}, {"BYTES_PER_SECOND", strconv.FormatFloat(m.bps, 'g', -1, 64)},
		{"RINGCAP_SPEAD_TIMESTAMP", strconv.FormatUint(m.t0, 10)}, {"RINGCAP_SPEAD_SYNC_TIME", strconv.FormatUint(m.sync, 10)},
		{"RINGCAP_SPEAD_SAMPLE_RATE", strconv.FormatUint(m.rate, 10)},
	}
}

// speadMeta is the stream's metadata at its first packet placed.
func (p *Pipeline) speadMeta() (speadMeta, error) {
	sync, err := p.speadValue(p.cfg.SPEADTime.SyncTime, p.cfg.SPEADTime.SyncTimeID, "sync time")
	if err != nil {
		return speadMeta{}, err
	}
	rate, err := p.speadValue(p.cfg.SPEADTime.SampleRate, p.cfg.SPEADTime.SampleRateID, "sample rate")
	if err != nil {
		return speadMeta{}, err
	}
	if rate == 0 {
		return speadMeta{}, fmt.Errorf("stream: SPEAD sample rate item 0x%x is 0", p.cfg.SPEADTime.SampleRateID)
	}
	t0, _ := p.spl.First()
	r := p.cfg.SPEAD
	overflow, perStep := bits.Mul64(r.Groups(), p.spl.HeapSize()) // bytes per TimestampStep
	hi, lo := bits.Mul64(t0%rate, perStep)
	if overflow != 0 || hi >= r.TimestampStep {
		return speadMeta{}, fmt.Errorf("stream: OBS_OFFSET of SPEAD timestamp %d overflows 64 bits", t0)
	}
	offset, _ := bits.Div64(hi, lo, r.TimestampStep)
	return speadMeta{
		utc: time.Unix(int64(sync+t0/rate), 0), offset: offset, t0: t0, sync: sync, rate: rate,
		bps: float64(rate) * float64(perStep) / float64(r.TimestampStep),
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

// vdifMeta is what a VDIF stream's header says: UTC_START is the first
// second (the frames' reference epoch plus seconds), at stream byte 0.
type vdifMeta struct {
	first       time.Time
	bps         uint64
	nbit, nchan int
	complex     bool
	station     uint16
	threads     int
	fps         uint32
}

func (m vdifMeta) keys() [][2]string {
	ndim := "1"
	if m.complex {
		ndim = "2"
	}
	return [][2]string{
		{"UTC_START", m.first.UTC().Format(dada.UTCStartLayout)}, {"RINGCAP_UTC_START_SOURCE", UTCStartStream},
		{"OBS_OFFSET", "0"}, {"BYTES_PER_SECOND", strconv.FormatUint(m.bps, 10)},
		{"NBIT", strconv.Itoa(m.nbit)}, {"NCHAN", strconv.Itoa(m.nchan)}, {"NDIM", ndim},
		{"RINGCAP_VDIF_STATION", station(m.station)}, {"RINGCAP_VDIF_THREADS", strconv.Itoa(m.threads)},
		{"RINGCAP_VDIF_FRAMES_PER_SECOND", strconv.FormatUint(uint64(m.fps), 10)},
	}
}

// vdifMeta is the stream's metadata from its first frame placed.
func (p *Pipeline) vdifMeta() vdifMeta {
	f := &p.vf
	first, _ := p.vpl.First()
	r := p.cfg.VDIF
	return vdifMeta{
		first: first, bps: uint64(r.FramesPerSecond) * uint64(r.ThreadCount()) * p.vpl.PayloadBytes(),
		nbit: f.BitsPerSample(), nchan: f.Channels(), complex: f.Complex, station: f.StationID,
		threads: r.ThreadCount(), fps: r.FramesPerSecond,
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
