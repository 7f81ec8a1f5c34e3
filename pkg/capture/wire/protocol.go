package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"unicode/utf8"
)

// ProtocolVersion is the version of the out-of-band handshake this package
// speaks. A receiver refuses a peer of a version it does not accept (see
// MinProtocolVersion) with a message naming the versions it accepts.
// Version 2: in write mode only a queue pair's last slice in a block carries
// an immediate (version 1: every slice). Version 3: write mode stripes whole
// blocks over the queue pairs (Geometry.WholeBlocks), so each block has one
// immediate. Version 4: write mode's queue pairs take whole blocks as they
// have room instead of in turn, so a block's immediate may come on any queue
// pair. Version 5: the Hello carries the sender's header keywords, and the
// receiver tells the sender while readers hold it back (Held). Version 6: the
// receiver speaks first after the sender's preamble, with its Settings (mode,
// queue pairs, message size), so that a sender can take them instead of
// being told them. Version 7: the Settings, Hello and Accept name the
// transport (verbs or ofi) and, for ofi, the libfabric provider; an ofi
// queue pair is described by its endpoint address (fi_getname, opaque
// bytes) instead of QPN/PSN/LID/GID/MTU; region keys are 64 bits. Version
// 8: in send mode the receiver grants receives (Posted) and the sender sends
// a slice only once its receive is posted, instead of sending into receiver-
// not-ready retries while the ring's readers hold blocks.
const ProtocolVersion = 8

// MinProtocolVersion is the oldest version a receiver accepts. A receiver
// accepts its own version and the one before, so that senders can be
// upgraded after it; a sender speaks ProtocolVersion only. Version 7's
// messages are byte-identical to version 8's; it lacks Posted, and a
// version-7 sender sends without waiting for receive grants, so a receiver
// sends none to it (Conn refuses to).
const MinProtocolVersion = 7

// PostedSince is the first version with Posted (send-mode receive grants).
const PostedSince = 8

// HeaderField is one keyword of an observation's PSRDADA header, as a sender
// sends it in its Hello.
type HeaderField struct {
	Key   string
	Value string
}

// MaxHeaderFields is the most keywords a sender may send for one observation.
const MaxHeaderFields = 256

// Magic opens every connection, followed by the big-endian uint16 version. It
// is what tells a ringcap peer from anything else that dials the port.
const Magic = "RCAP"

// MaxQPs is the largest number of queue pairs one connection may use.
const MaxQPs = 64

// MaxAddrBytes is the longest libfabric endpoint address a queue pair may
// have (EFA's is 32 bytes, tcp's a sockaddr of 16 or 28).
const MaxAddrBytes = 256

// MaxProviderBytes is the longest libfabric provider name ("tcp;ofi_rxm").
const MaxProviderBytes = 64

// Transport is the fabric a connection's queue pairs use.
type Transport uint8

// Transports.
const (
	TransportVerbs Transport = 1 // RC queue pairs over libibverbs
	TransportOFI   Transport = 2 // reliable-datagram endpoints over libfabric
)

func (t Transport) String() string {
	switch t {
	case TransportVerbs:
		return "verbs"
	case TransportOFI:
		return "ofi"
	}
	return fmt.Sprintf("transport(%d)", uint8(t))
}

// ParseTransport parses "verbs" or "ofi".
func ParseTransport(s string) (Transport, error) {
	switch strings.ToLower(s) {
	case "verbs":
		return TransportVerbs, nil
	case "ofi", "libfabric":
		return TransportOFI, nil
	}
	return 0, fmt.Errorf("unknown transport %q (want verbs or ofi)", s)
}

// Fabric names a transport and, for ofi, its libfabric provider: what both
// ends of a connection must share.
type Fabric struct {
	Transport Transport
	Provider  string // ofi only, e.g. "tcp;ofi_rxm", "efa"; empty for verbs
}

func (f Fabric) String() string {
	if f.Transport == TransportOFI {
		return fmt.Sprintf("transport ofi, provider %q", f.Provider)
	}
	return "transport " + f.Transport.String()
}

// Validate checks that the transport is known and that the provider is
// given exactly for ofi, as a short printable name.
func (f Fabric) Validate() error {
	switch f.Transport {
	case TransportVerbs:
		if f.Provider != "" {
			return fmt.Errorf("%w: provider %q with the verbs transport", ErrProtocol, f.Provider)
		}
		return nil
	case TransportOFI:
		if f.Provider == "" || len(f.Provider) > MaxProviderBytes {
			return fmt.Errorf("%w: ofi provider name of %d bytes (want 1..%d)", ErrProtocol, len(f.Provider), MaxProviderBytes)
		}
		for _, c := range []byte(f.Provider) {
			if c <= ' ' || c > '~' {
				return fmt.Errorf("%w: ofi provider name %q has a character that is not printable ASCII", ErrProtocol, f.Provider)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown transport %d", ErrProtocol, f.Transport)
}

// Limits the decoder enforces before allocating anything.
const (
	maxFrame    = 16 << 20 // bytes of one message payload
	maxRegions  = 1 << 20  // write-mode address/rkey table entries
	maxText     = 4096     // bytes of a Reject/Done message text
	preambleLen = len(Magic) + 2
)

// ErrProtocol is wrapped by every error caused by bytes that do not follow the
// protocol (garbage, truncated or out-of-range fields, unexpected messages).
var ErrProtocol = errors.New("ringcap protocol error")

// Mode is the transfer mode of a connection.
type Mode uint8

// Transfer modes.
const (
	ModeSend  Mode = 1 // SEND into receive WRs that point into ring blocks
	ModeWrite Mode = 2 // RDMA_WRITE_WITH_IMM into blocks granted by credits
)

// WholeBlocks says whether the mode sends each block whole on one queue pair:
// write mode does (since version 3), so that each block has one immediate;
// send mode stripes slices over the queue pairs.
func (m Mode) WholeBlocks() bool { return m == ModeWrite }

func (m Mode) String() string {
	switch m {
	case ModeSend:
		return "send"
	case ModeWrite:
		return "write"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode parses "send" or "write".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "send":
		return ModeSend, nil
	case "write":
		return ModeWrite, nil
	}
	return 0, fmt.Errorf("unknown transfer mode %q (want send or write)", s)
}

// MRMode says how the receiver registered its ring, which decides the shape of
// the write-mode region table: one entry for the whole ring or one per block.
type MRMode uint8

// Memory-registration modes as seen by the sender.
const (
	MRWholeRing MRMode = 1
	MRPerBlock  MRMode = 2
)

func (m MRMode) String() string {
	switch m {
	case MRWholeRing:
		return "WholeRing"
	case MRPerBlock:
		return "PerBlock"
	}
	return fmt.Sprintf("mrmode(%d)", uint8(m))
}

// QPInfo is what one side tells the other about one of its queue pairs: a
// verbs RC queue pair's QPN, PSN, LID, GID and MTU, or an ofi endpoint's
// address (Addr) and nothing else.
type QPInfo struct {
	QPN uint32   // queue pair number (24 bits)
	PSN uint32   // initial packet sequence number (24 bits)
	LID uint16   // port LID (0 on RoCE)
	GID [16]byte // the GID chosen for the connection
	MTU uint32   // active path MTU in bytes (256..4096)
	// Addr is an ofi endpoint's address (fi_getname): 1..MaxAddrBytes
	// opaque bytes for the peer's fi_av_insert.
	Addr []byte
}

// Region is one entry of the write-mode table: remote address, length and
// key. The address is what the sender writes to for the region's byte 0: a
// virtual address, or an offset into the region where the ofi provider
// addresses regions by offset. Keys are 64-bit (libfabric); a verbs rkey
// is 32-bit.
type Region struct {
	Addr uint64
	Len  uint64
	RKey uint64
}

// Hello is the sender's first message (after the preamble).
type Hello struct {
	Mode     Mode
	MsgBytes uint32 // bytes per message (slice)
	// TotalBytes is the stream length when the sender knows it up front
	// (--bytes, a file); 0 when it does not (--duration). The End message
	// always carries the exact count.
	TotalBytes uint64
	// Fabric is the sender's transport and provider: the receiver refuses
	// a sender whose Fabric differs from its own.
	Fabric Fabric
	QPs    []QPInfo // 1..MaxQPs
	// Header holds keywords for this observation's header, merged over the
	// receiver's template (ObservationHeaders); at most MaxHeaderFields.
	Header []HeaderField
}

// Accept is the receiver's positive answer to a Hello.
type Accept struct {
	Mode     Mode
	MsgBytes uint32
	NBufs    uint32 // ring blocks
	BufSize  uint64 // bytes per block
	MRMode   MRMode
	Fabric   Fabric   // the receiver's, the same as the Hello's
	QPs      []QPInfo // same count as the Hello's
	// Regions is the write-mode table: empty in send mode, one entry covering
	// NBufs*BufSize bytes for MRWholeRing, NBufs entries for MRPerBlock.
	Regions []Region
}

// Reject refuses a connection; Message says why. Its encoding never changes
// between protocol versions, so every version can read it.
type Reject struct{ Message string }

// Credit grants the sender one free ring block (write mode). Seq is the
// block's sequence number within the observation (0, 1, 2, ...), Index its ring
// index (which region entry or offset to write to).
type Credit struct {
	Seq   uint64
	Index uint32
}

// Posted grants receives (send mode): the receiver has posted a receive WR
// for every slice on queue pair QP below slice Upto (a stream slice number,
// not a count). Upto only grows on a queue pair; the sender sends a slice
// only below it.
type Posted struct {
	QP   uint16
	Upto uint64
}

// End is the sender's end of stream: the exact number of bytes it sent.
// Complete is false when the sender stopped early (an error or a signal).
type End struct {
	Bytes    uint64
	Complete bool
}

// Done is the receiver's last word: what it committed to the ring.
type Done struct {
	Bytes   uint64
	Blocks  uint64
	OK      bool
	Message string
}

// Held is the receiver's word on holds (its ring's readers had no block free
// for the stream): Holding says one is going on, HoldNanos how long it has
// lasted, Nanos the observation's held-back time so far, the hold going on
// included. The receiver sends it while held back, when a hold it reported
// ends, and before Done.
type Held struct {
	Holding   bool
	Nanos     uint64
	HoldNanos uint64
}

// Settings is what the receiver runs with, sent as soon as it has read the
// sender's preamble: a sender that was not told these takes them, one that
// was can see a mismatch before it creates anything.
type Settings struct {
	Mode     Mode
	QPs      uint16
	MsgBytes uint32
	Fabric   Fabric
}

func (m Settings) validate() error {
	if err := ValidateLink(m.Mode, int(m.QPs), uint64(m.MsgBytes)); err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return m.Fabric.Validate()
}

// Message is any protocol message.
type Message interface{ msgType() byte }

const (
	typeHello    byte = 1
	typeAccept   byte = 2
	typeReject   byte = 3
	typeCredit   byte = 4
	typeEnd      byte = 5
	typeDone     byte = 6
	typeHeld     byte = 7
	typeSettings byte = 8
	typePosted   byte = 9
)

func (Hello) msgType() byte    { return typeHello }
func (Accept) msgType() byte   { return typeAccept }
func (Reject) msgType() byte   { return typeReject }
func (Credit) msgType() byte   { return typeCredit }
func (End) msgType() byte      { return typeEnd }
func (Done) msgType() byte     { return typeDone }
func (Held) msgType() byte     { return typeHeld }
func (Settings) msgType() byte { return typeSettings }
func (Posted) msgType() byte   { return typePosted }

// Preamble is what opens a connection: the magic and the protocol version.
func Preamble() []byte {
	b := make([]byte, preambleLen)
	copy(b, Magic)
	binary.BigEndian.PutUint16(b[len(Magic):], ProtocolVersion)
	return b
}

// WritePreamble writes the magic and the protocol version.
func WritePreamble(w io.Writer) error {
	_, err := w.Write(Preamble())
	return err
}

// VersionError is returned by ReadPreamble for a ringcap peer that speaks
// a protocol version this side does not accept.
type VersionError struct{ Got uint16 }

func (e *VersionError) Error() string {
	return fmt.Sprintf("handshake version %d is not supported (this side accepts versions %d and %d)", e.Got, MinProtocolVersion, ProtocolVersion)
}

// ReadPreamble reads and checks the magic and version, and returns the
// version: MinProtocolVersion..ProtocolVersion. Bytes that are not a ringcap
// preamble give an error wrapping ErrProtocol; a ringcap peer of another
// version gives a *VersionError.
func ReadPreamble(r io.Reader) (uint16, error) {
	var b [preambleLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("read handshake preamble: %w", err)
	}
	if string(b[:len(Magic)]) != Magic {
		return 0, fmt.Errorf("%w: not a ringcap handshake (first bytes %q)", ErrProtocol, b[:])
	}
	v := binary.BigEndian.Uint16(b[len(Magic):])
	if v < MinProtocolVersion || v > ProtocolVersion {
		return 0, &VersionError{Got: v}
	}
	return v, nil
}

// since is the first protocol version that has messages of type typ.
func since(typ byte) uint16 {
	if typ == typePosted {
		return PostedSince
	}
	return MinProtocolVersion
}

// WriteMessage writes one framed message: type byte, big-endian uint32 payload
// length, payload.
func WriteMessage(w io.Writer, m Message) error {
	p, err := encode(m)
	if err != nil {
		return err
	}
	_, err = w.Write(p)
	return err
}

// ReadMessage reads one framed message. It never allocates more than the
// frame limit and checks every field's range.
func ReadMessage(r io.Reader) (Message, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: message of %d bytes exceeds the %d-byte limit", ErrProtocol, n, maxFrame)
	}
	if h[0] < typeHello || h[0] > typePosted {
		return nil, fmt.Errorf("%w: unknown message type %d", ErrProtocol, h[0])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("read message body: %w", err)
	}
	return Decode(h[0], p)
}

func encode(m Message) ([]byte, error) {
	b := []byte{m.msgType(), 0, 0, 0, 0}
	switch m := m.(type) {
	case Hello:
		if err := m.validate(); err != nil {
			return nil, err
		}
		b = append(b, byte(m.Mode))
		b = binary.BigEndian.AppendUint32(b, m.MsgBytes)
		b = binary.BigEndian.AppendUint64(b, m.TotalBytes)
		b = appendFabric(b, m.Fabric)
		b = appendQPs(b, m.Fabric.Transport, m.QPs)
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.Header)))
		for _, f := range m.Header {
			b = appendText(appendText(b, f.Key), f.Value)
		}
	case Accept:
		if err := m.validate(); err != nil {
			return nil, err
		}
		b = append(b, byte(m.Mode), byte(m.MRMode))
		b = binary.BigEndian.AppendUint32(b, m.MsgBytes)
		b = binary.BigEndian.AppendUint32(b, m.NBufs)
		b = binary.BigEndian.AppendUint64(b, m.BufSize)
		b = appendFabric(b, m.Fabric)
		b = appendQPs(b, m.Fabric.Transport, m.QPs)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Regions)))
		for _, r := range m.Regions {
			b = binary.BigEndian.AppendUint64(b, r.Addr)
			b = binary.BigEndian.AppendUint64(b, r.Len)
			b = binary.BigEndian.AppendUint64(b, r.RKey)
		}
	case Reject:
		b = appendText(b, m.Message)
	case Credit:
		b = appendCredit(b, m)
	case Posted:
		if m.QP >= MaxQPs {
			return nil, fmt.Errorf("%w: receives posted on queue pair %d (at most %d queue pairs)", ErrProtocol, m.QP, MaxQPs)
		}
		b = appendPosted(b, m)
	case End:
		b = binary.BigEndian.AppendUint64(b, m.Bytes)
		b = append(b, boolByte(m.Complete))
	case Done:
		b = binary.BigEndian.AppendUint64(b, m.Bytes)
		b = binary.BigEndian.AppendUint64(b, m.Blocks)
		b = append(b, boolByte(m.OK))
		b = appendText(b, m.Message)
	case Held:
		b = append(b, boolByte(m.Holding))
		b = binary.BigEndian.AppendUint64(b, m.Nanos)
		b = binary.BigEndian.AppendUint64(b, m.HoldNanos)
	case Settings:
		if err := m.validate(); err != nil {
			return nil, err
		}
		b = append(b, byte(m.Mode))
		b = binary.BigEndian.AppendUint16(b, m.QPs)
		b = binary.BigEndian.AppendUint32(b, m.MsgBytes)
		b = appendFabric(b, m.Fabric)
	default:
		return nil, fmt.Errorf("encode %T: unknown message", m)
	}
	if len(b)-5 > maxFrame {
		return nil, fmt.Errorf("encode %T: %d bytes exceed the %d-byte limit", m, len(b)-5, maxFrame)
	}
	binary.BigEndian.PutUint32(b[1:5], uint32(len(b)-5))
	return b, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendFabric(b []byte, f Fabric) []byte {
	return appendText(append(b, byte(f.Transport)), f.Provider)
}

// appendQPs encodes the queue-pair table: a count, then per queue pair its
// verbs fields or (ofi) its address with a 16-bit length.
func appendQPs(b []byte, t Transport, qps []QPInfo) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(qps)))
	if t == TransportOFI {
		for _, q := range qps {
			b = binary.BigEndian.AppendUint16(b, uint16(len(q.Addr)))
			b = append(b, q.Addr...)
		}
		return b
	}
	for _, q := range qps {
		b = binary.BigEndian.AppendUint32(b, q.QPN)
		b = binary.BigEndian.AppendUint32(b, q.PSN)
		b = binary.BigEndian.AppendUint16(b, q.LID)
		b = append(b, q.GID[:]...)
		b = binary.BigEndian.AppendUint32(b, q.MTU)
	}
	return b
}

func appendText(b []byte, s string) []byte {
	if len(s) > maxText {
		s = s[:maxText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// dec reads fields from a payload, remembering the first error.
type dec struct {
	p   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.p) < n {
		d.err = fmt.Errorf("%w: message truncated", ErrProtocol)
		return nil
	}
	v := d.p[:n]
	d.p = d.p[n:]
	return v
}

func (d *dec) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *dec) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *dec) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *dec) boolean() bool {
	switch v := d.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("boolean field is %d", v)
		return false
	}
}

func (d *dec) text() string {
	n := int(d.u16())
	if n > maxText {
		d.fail("text of %d bytes exceeds %d", n, maxText)
		return ""
	}
	v := d.take(n)
	if d.err == nil && !utf8.Valid(v) {
		d.fail("text is not UTF-8")
	}
	return string(v)
}

func (d *dec) fabric() Fabric {
	return Fabric{Transport: Transport(d.u8()), Provider: d.text()}
}

func (d *dec) qps(t Transport) []QPInfo {
	n := int(d.u16())
	if d.err != nil {
		return nil
	}
	if n < 1 || n > MaxQPs {
		d.fail("%d queue pairs (want 1..%d)", n, MaxQPs)
		return nil
	}
	switch t {
	case TransportOFI:
		return d.addrs(n)
	case TransportVerbs:
	default:
		d.fail("queue-pair table of unknown transport %d", t)
		return nil
	}
	if len(d.p) < n*30 {
		d.fail("queue-pair table truncated")
		return nil
	}
	qps := make([]QPInfo, n)
	for i := range qps {
		q := &qps[i]
		q.QPN = d.u32()
		q.PSN = d.u32()
		q.LID = d.u16()
		copy(q.GID[:], d.take(16))
		q.MTU = d.u32()
	}
	return qps
}

// addrs decodes n ofi endpoint addresses.
func (d *dec) addrs(n int) []QPInfo {
	qps := make([]QPInfo, n)
	for i := range qps {
		l := int(d.u16())
		if d.err == nil && (l < 1 || l > MaxAddrBytes) {
			d.fail("queue pair %d: endpoint address of %d bytes (want 1..%d)", i, l, MaxAddrBytes)
		}
		if v := d.take(l); d.err == nil {
			qps[i].Addr = bytes.Clone(v)
		}
	}
	if d.err != nil {
		return nil
	}
	return qps
}

func (d *dec) header() []HeaderField {
	n := int(d.u16())
	if d.err != nil || n == 0 {
		return nil
	}
	if n > MaxHeaderFields {
		d.fail("%d header keywords (at most %d)", n, MaxHeaderFields)
		return nil
	}
	out := make([]HeaderField, n)
	for i := range out {
		out[i] = HeaderField{Key: d.text(), Value: d.text()}
	}
	return out
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
	}
}

func (d *dec) end(what string) error {
	if d.err != nil {
		return fmt.Errorf("decode %s: %w", what, d.err)
	}
	if len(d.p) != 0 {
		return fmt.Errorf("decode %s: %w: %d trailing bytes", what, ErrProtocol, len(d.p))
	}
	return nil
}

// Decode parses the payload of a message of the given type.
func Decode(typ byte, p []byte) (Message, error) {
	d := &dec{p: p}
	switch typ {
	case typeHello:
		var m Hello
		m.Mode = Mode(d.u8())
		m.MsgBytes = d.u32()
		m.TotalBytes = d.u64()
		m.Fabric = d.fabric()
		m.QPs = d.qps(m.Fabric.Transport)
		m.Header = d.header()
		if err := d.end("hello"); err != nil {
			return nil, err
		}
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("decode hello: %w", err)
		}
		return m, nil
	case typeAccept:
		var m Accept
		m.Mode = Mode(d.u8())
		m.MRMode = MRMode(d.u8())
		m.MsgBytes = d.u32()
		m.NBufs = d.u32()
		m.BufSize = d.u64()
		m.Fabric = d.fabric()
		m.QPs = d.qps(m.Fabric.Transport)
		n := d.u32()
		if d.err == nil && (n > maxRegions || uint64(len(d.p)) < uint64(n)*24) {
			d.fail("region table of %d entries does not fit the message", n)
		}
		if d.err == nil && n > 0 {
			m.Regions = make([]Region, n)
			for i := range m.Regions {
				m.Regions[i] = Region{Addr: d.u64(), Len: d.u64(), RKey: d.u64()}
			}
		}
		if err := d.end("accept"); err != nil {
			return nil, err
		}
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("decode accept: %w", err)
		}
		return m, nil
	case typeReject:
		m := Reject{Message: d.text()}
		return m, d.end("reject")
	case typeCredit:
		m := Credit{Seq: d.u64(), Index: d.u32()}
		return m, d.end("credit")
	case typePosted:
		return d.posted()
	case typeEnd:
		m := End{Bytes: d.u64(), Complete: d.boolean()}
		return m, d.end("end")
	case typeDone:
		m := Done{Bytes: d.u64(), Blocks: d.u64(), OK: d.boolean(), Message: d.text()}
		return m, d.end("done")
	case typeHeld:
		m := Held{Holding: d.boolean(), Nanos: d.u64(), HoldNanos: d.u64()}
		return m, d.end("held")
	case typeSettings:
		return d.settings()
	}
	return nil, fmt.Errorf("%w: unknown message type %d", ErrProtocol, typ)
}

func (d *dec) settings() (Message, error) {
	m := Settings{Mode: Mode(d.u8()), QPs: d.u16(), MsgBytes: d.u32(), Fabric: d.fabric()}
	if err := d.end("settings"); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("decode settings: %w", err)
	}
	return m, nil
}

func (d *dec) posted() (Message, error) {
	m := Posted{QP: d.u16(), Upto: d.u64()}
	if d.err == nil && m.QP >= MaxQPs {
		d.fail("receives posted on queue pair %d (at most %d queue pairs)", m.QP, MaxQPs)
	}
	if err := d.end("posted"); err != nil {
		return nil, err
	}
	return m, nil
}

func validMTU(m uint32) bool {
	return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096
}

func validateQPs(f Fabric, qps []QPInfo) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if len(qps) < 1 || len(qps) > MaxQPs {
		return fmt.Errorf("%w: %d queue pairs (want 1..%d)", ErrProtocol, len(qps), MaxQPs)
	}
	if f.Transport == TransportOFI {
		return validateAddrs(qps)
	}
	for i, q := range qps {
		if len(q.Addr) != 0 {
			return fmt.Errorf("%w: queue pair %d: an endpoint address on the verbs transport", ErrProtocol, i)
		}
		if q.QPN == 0 || q.QPN >= 1<<24 {
			return fmt.Errorf("%w: queue pair %d: QPN %d out of range", ErrProtocol, i, q.QPN)
		}
		if q.PSN >= 1<<24 {
			return fmt.Errorf("%w: queue pair %d: PSN %d out of range", ErrProtocol, i, q.PSN)
		}
		if !validMTU(q.MTU) {
			return fmt.Errorf("%w: queue pair %d: MTU %d is not an IB MTU", ErrProtocol, i, q.MTU)
		}
	}
	return nil
}

// validateAddrs checks ofi queue pairs: an address each and no verbs fields.
func validateAddrs(qps []QPInfo) error {
	for i, q := range qps {
		if len(q.Addr) < 1 || len(q.Addr) > MaxAddrBytes {
			return fmt.Errorf("%w: queue pair %d: endpoint address of %d bytes (want 1..%d)", ErrProtocol, i, len(q.Addr), MaxAddrBytes)
		}
		if q.QPN != 0 || q.PSN != 0 || q.LID != 0 || q.GID != [16]byte{} || q.MTU != 0 {
			return fmt.Errorf("%w: queue pair %d: verbs fields on the ofi transport", ErrProtocol, i)
		}
	}
	return nil
}

func (m Hello) validate() error {
	if m.Mode != ModeSend && m.Mode != ModeWrite {
		return fmt.Errorf("%w: unknown transfer mode %d", ErrProtocol, m.Mode)
	}
	if m.MsgBytes == 0 {
		return fmt.Errorf("%w: message size 0", ErrProtocol)
	}
	if len(m.Header) > MaxHeaderFields {
		return fmt.Errorf("%w: %d header keywords (at most %d)", ErrProtocol, len(m.Header), MaxHeaderFields)
	}
	for _, f := range m.Header {
		if f.Key == "" || len(f.Key) > maxText || len(f.Value) > maxText {
			return fmt.Errorf("%w: header keyword %.40q: empty, or key or value longer than %d bytes", ErrProtocol, f.Key, maxText)
		}
	}
	return validateQPs(m.Fabric, m.QPs)
}

func (m Accept) validate() error {
	if m.Mode != ModeSend && m.Mode != ModeWrite {
		return fmt.Errorf("%w: unknown transfer mode %d", ErrProtocol, m.Mode)
	}
	if m.MRMode != MRWholeRing && m.MRMode != MRPerBlock {
		return fmt.Errorf("%w: unknown memory-registration mode %d", ErrProtocol, m.MRMode)
	}
	if m.MsgBytes == 0 || m.NBufs == 0 || m.BufSize == 0 {
		return fmt.Errorf("%w: empty geometry (msg %d bytes, %d blocks of %d bytes)", ErrProtocol, m.MsgBytes, m.NBufs, m.BufSize)
	}
	if m.BufSize > 1<<48 || uint64(m.NBufs) > 1<<32/2 {
		return fmt.Errorf("%w: ring geometry %d x %d out of range", ErrProtocol, m.NBufs, m.BufSize)
	}
	if err := validateQPs(m.Fabric, m.QPs); err != nil {
		return err
	}
	if err := m.validateKeys(); err != nil {
		return err
	}
	return m.validateRegions()
}

// validateRegions checks the region table against the mode and the ring's geometry.
func (m Accept) validateRegions() error {
	switch {
	case m.Mode == ModeSend && len(m.Regions) != 0:
		return fmt.Errorf("%w: send mode with a region table", ErrProtocol)
	case m.Mode == ModeWrite && m.MRMode == MRWholeRing:
		if len(m.Regions) != 1 || m.Regions[0].Len != uint64(m.NBufs)*m.BufSize {
			return fmt.Errorf("%w: whole-ring table must be one region of %d bytes", ErrProtocol, uint64(m.NBufs)*m.BufSize)
		}
	case m.Mode == ModeWrite && m.MRMode == MRPerBlock:
		if len(m.Regions) != int(m.NBufs) {
			return fmt.Errorf("%w: per-block table has %d regions for %d blocks", ErrProtocol, len(m.Regions), m.NBufs)
		}
		for i, r := range m.Regions {
			if r.Len != m.BufSize {
				return fmt.Errorf("%w: region %d is %d bytes, block size is %d", ErrProtocol, i, r.Len, m.BufSize)
			}
		}
	}
	return nil
}

// validateKeys refuses a verbs region key beyond the 32 bits of an rkey.
func (m Accept) validateKeys() error {
	if m.Fabric.Transport != TransportVerbs {
		return nil
	}
	for i, r := range m.Regions {
		if r.RKey > math.MaxUint32 {
			return fmt.Errorf("%w: region %d: key %#x exceeds a 32-bit verbs rkey", ErrProtocol, i, r.RKey)
		}
	}
	return nil
}

// BlockTarget returns the remote address and rkey of byte 0 of ring block
// index in an Accept's write-mode table.
func (m Accept) BlockTarget(index uint32) (addr uint64, rkey uint64, err error) {
	if index >= m.NBufs {
		return 0, 0, fmt.Errorf("%w: block index %d outside a ring of %d blocks", ErrProtocol, index, m.NBufs)
	}
	switch m.MRMode {
	case MRWholeRing:
		return m.Regions[0].Addr + uint64(index)*m.BufSize, m.Regions[0].RKey, nil
	default:
		return m.Regions[index].Addr, m.Regions[index].RKey, nil
	}
}

// Conn frames messages over one stream connection (TCP), buffered both ways.
// It speaks the peer's version: ProtocolVersion, or the version ReadPreamble
// read; it refuses to send or take a message that version lacks.
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	scratch []byte // QueueCredit's and QueuePosted's frame, reused
	version uint16
}

// appendCredit appends a Credit's body.
func appendCredit(b []byte, m Credit) []byte {
	b = binary.BigEndian.AppendUint64(b, m.Seq)
	return binary.BigEndian.AppendUint32(b, m.Index)
}

// appendPosted appends a Posted's body.
func appendPosted(b []byte, m Posted) []byte {
	b = binary.BigEndian.AppendUint16(b, m.QP)
	return binary.BigEndian.AppendUint64(b, m.Upto)
}

// NewConn wraps c; the caller still owns (and closes) c.
func NewConn(c net.Conn) *Conn {
	return &Conn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c), version: ProtocolVersion}
}

// Version is the protocol version the connection speaks: ProtocolVersion,
// or the peer's since ReadPreamble.
func (c *Conn) Version() uint16 { return c.version }

// speaks checks that the peer's version has messages of type typ.
func (c *Conn) speaks(typ byte) error {
	if v := since(typ); c.version < v {
		return fmt.Errorf("%w: message type %d does not exist in version %d, which %s speaks (it came in version %d)", ErrProtocol, typ, c.version, c.c.RemoteAddr(), v)
	}
	return nil
}

// NetConn is the wrapped connection (for deadlines, addresses and Close).
func (c *Conn) NetConn() net.Conn { return c.c }

// WritePreamble writes the preamble and flushes: from version 6 the receiver
// answers it before the sender says more.
func (c *Conn) WritePreamble() error {
	if err := WritePreamble(c.w); err != nil {
		return err
	}
	return c.w.Flush()
}

// ReadPreamble reads and checks the peer's preamble (see ReadPreamble);
// from then on the connection speaks the peer's version.
func (c *Conn) ReadPreamble() (uint16, error) {
	v, err := ReadPreamble(c.r)
	if err == nil {
		c.version = v
	}
	return v, err
}

// Send writes one message and flushes.
func (c *Conn) Send(m Message) error {
	if err := c.speaks(m.msgType()); err != nil {
		return fmt.Errorf("send %T: %w", m, err)
	}
	if err := WriteMessage(c.w, m); err != nil {
		return fmt.Errorf("send %T to %s: %w", m, c.c.RemoteAddr(), err)
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("send %T to %s: %w", m, c.c.RemoteAddr(), err)
	}
	return nil
}

// Queue writes one message without flushing it: Flush, or the next Send,
// puts it on the wire, so that several queued messages go out in one write.
func (c *Conn) Queue(m Message) error {
	if err := c.speaks(m.msgType()); err != nil {
		return fmt.Errorf("queue %T: %w", m, err)
	}
	if err := WriteMessage(c.w, m); err != nil {
		return fmt.Errorf("queue %T to %s: %w", m, c.c.RemoteAddr(), err)
	}
	return nil
}

// QueueCredit is Queue for a Credit without allocating: write mode queues one
// per ring block.
func (c *Conn) QueueCredit(m Credit) error {
	return c.queueFrame("wire.Credit", appendCredit(append(c.scratch[:0], typeCredit, 0, 0, 0, 0), m))
}

// QueuePosted is Queue for a Posted without allocating: send mode queues
// them as receives are posted.
func (c *Conn) QueuePosted(m Posted) error {
	if m.QP >= MaxQPs {
		return fmt.Errorf("queue wire.Posted to %s: %w: queue pair %d", c.c.RemoteAddr(), ErrProtocol, m.QP)
	}
	if err := c.speaks(typePosted); err != nil {
		return fmt.Errorf("queue wire.Posted: %w", err)
	}
	return c.queueFrame("wire.Posted", appendPosted(append(c.scratch[:0], typePosted, 0, 0, 0, 0), m))
}

// queueFrame sets the length of frame b (a message of type what, built in
// the scratch buffer) and queues it.
func (c *Conn) queueFrame(what string, b []byte) error {
	binary.BigEndian.PutUint32(b[1:5], uint32(len(b)-5))
	c.scratch = b
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("queue %s to %s: %w", what, c.c.RemoteAddr(), err)
	}
	return nil
}

// Flush writes the queued messages.
func (c *Conn) Flush() error {
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("send to %s: %w", c.c.RemoteAddr(), err)
	}
	return nil
}

// Recv reads one message; one the peer's version lacks is a protocol error.
func (c *Conn) Recv() (Message, error) {
	m, err := ReadMessage(c.r)
	if err != nil {
		return nil, err
	}
	if err := c.speaks(m.msgType()); err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	return m, nil
}
