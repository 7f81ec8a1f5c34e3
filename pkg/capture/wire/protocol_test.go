package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
)

func qps(n int) []QPInfo {
	out := make([]QPInfo, n)
	for i := range out {
		out[i] = QPInfo{QPN: uint32(17 + i), PSN: uint32(0xabc + i), LID: 0, MTU: 4096}
		out[i].GID[10], out[i].GID[11], out[i].GID[12], out[i].GID[15] = 0xff, 0xff, 198, byte(i)
	}
	return out
}

var verbs = Fabric{Transport: TransportVerbs}

// ofiTCP is an ofi fabric; ofiQPs are its endpoints' addresses (a tcp
// sockaddr_in, an EFA-sized 32 bytes and the longest allowed).
var ofiTCP = Fabric{Transport: TransportOFI, Provider: "tcp;ofi_rxm"}

func ofiQPs(n int) []QPInfo {
	out := make([]QPInfo, n)
	for i := range out {
		out[i].Addr = bytes.Repeat([]byte{byte(i + 1)}, []int{16, 32, MaxAddrBytes}[i%3])
	}
	return out
}

func sampleMessages() []Message {
	return []Message{
		Hello{Mode: ModeWrite, MsgBytes: 65536, Fabric: ofiTCP, QPs: ofiQPs(3)},
		Hello{Mode: ModeSend, MsgBytes: 4096, Fabric: Fabric{Transport: TransportOFI, Provider: "efa"}, QPs: ofiQPs(MaxQPs)},
		Accept{Mode: ModeWrite, MRMode: MRPerBlock, MsgBytes: 4096, NBufs: 2, BufSize: 8192, Fabric: ofiTCP, QPs: ofiQPs(4),
			Regions: []Region{{Addr: 0, Len: 8192, RKey: 1 << 63}, {Addr: 0, Len: 8192, RKey: 0xfedcba9876543210}}},
		Settings{Mode: ModeWrite, QPs: 16, MsgBytes: 65536, Fabric: ofiTCP},
		Hello{Mode: ModeSend, MsgBytes: 65536, Fabric: verbs, TotalBytes: 1 << 30, QPs: qps(4)},
		Hello{Mode: ModeWrite, MsgBytes: 1, Fabric: verbs, QPs: qps(64)},
		Hello{Mode: ModeWrite, MsgBytes: 4096, Fabric: verbs, QPs: qps(2), Header: []HeaderField{{"SOURCE", "J0437-4715"}, {"UTC_START", "2026-11-25-10:00:00"}}},
		Accept{Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 65536, NBufs: 8, BufSize: 1 << 20, Fabric: verbs, QPs: qps(4)},
		Accept{Mode: ModeWrite, MRMode: MRWholeRing, MsgBytes: 4096, NBufs: 8, BufSize: 1 << 20, Fabric: verbs, QPs: qps(1),
			Regions: []Region{{Addr: 0x7f0000000000, Len: 8 << 20, RKey: 0x1234}}},
		Accept{Mode: ModeWrite, MRMode: MRPerBlock, MsgBytes: 4096, NBufs: 2, BufSize: 413184, Fabric: verbs, QPs: qps(2),
			Regions: []Region{{Addr: 0x7f0000000000, Len: 413184, RKey: 1}, {Addr: 0x7e0000000000, Len: 413184, RKey: 2}}},
		Reject{Message: "sender asked for 8 queue pairs, this receiver uses 4"},
		Credit{Seq: 1 << 40, Index: 7},
		Posted{QP: 0, Upto: 0},
		Posted{QP: MaxQPs - 1, Upto: 1<<64 - 1},
		End{Bytes: 123456789, Complete: true},
		End{Bytes: 0},
		Done{Bytes: 99, Blocks: 1, OK: true, Message: ""},
		Done{Message: "incomplete: sender disconnected"},
		Held{Holding: true, Nanos: 3e9, HoldNanos: 1e9},
		Held{Nanos: 1 << 62},
		Settings{Mode: ModeWrite, QPs: 4, MsgBytes: 65536, Fabric: verbs},
		Settings{Mode: ModeSend, QPs: MaxQPs, MsgBytes: 1, Fabric: verbs},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WritePreamble(&buf); err != nil {
		t.Fatal(err)
	}
	msgs := sampleMessages()
	for _, m := range msgs {
		if err := WriteMessage(&buf, m); err != nil {
			t.Fatalf("write %T: %v", m, err)
		}
	}
	if _, err := ReadPreamble(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range msgs {
		got, err := ReadMessage(&buf)
		if err != nil {
			t.Fatalf("read %T: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
	}
	if _, err := ReadMessage(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last message: %v", err)
	}
}

// A receiver accepts its own version and the one before; any other is
// refused with the versions it accepts named.
func TestPreamble(t *testing.T) {
	t.Parallel()
	if _, err := ReadPreamble(bytes.NewReader([]byte("GET / HTTP/1.1\r\n"))); !errors.Is(err, ErrProtocol) {
		t.Fatalf("garbage: %v", err)
	}
	for _, v := range []uint16{1, 6, 9, 0x0800} {
		var ve *VersionError
		_, err := ReadPreamble(bytes.NewReader([]byte{'R', 'C', 'A', 'P', byte(v >> 8), byte(v)}))
		if !errors.As(err, &ve) || ve.Got != v {
			t.Fatalf("version %d: %v", v, err)
		}
		if want := fmt.Sprintf("handshake version %d is not supported (this side accepts versions 7 and 8)", v); err.Error() != want {
			t.Fatalf("version %d: %q, want %q", v, err, want)
		}
	}
	for _, v := range []uint16{7, 8} {
		if got, err := ReadPreamble(bytes.NewReader([]byte{'R', 'C', 'A', 'P', 0, byte(v)})); err != nil || got != v {
			t.Fatalf("version %d: %d, %v", v, got, err)
		}
	}
	if v, err := ReadPreamble(bytes.NewReader(Preamble())); err != nil || v != ProtocolVersion {
		t.Fatalf("this version: %d, %v", v, err)
	}
	if _, err := ReadPreamble(bytes.NewReader([]byte("RCA"))); err == nil {
		t.Fatal("short preamble accepted")
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	enc := func(m Message) []byte {
		b, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hello := enc(Hello{Mode: ModeSend, MsgBytes: 8, Fabric: verbs, QPs: qps(1)})
	cases := map[string][]byte{
		"huge frame":      {typeHello, 0xff, 0xff, 0xff, 0xff},
		"unknown type":    {10, 0, 0, 0, 0},
		"posted qp 64":    {typePosted, 0, 0, 0, 10, 0, 64, 0, 0, 0, 0, 0, 0, 0, 1},
		"posted short":    {typePosted, 0, 0, 0, 9, 0, 1, 0, 0, 0, 0, 0, 0, 1},
		"posted trailing": {typePosted, 0, 0, 0, 11, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		"truncated":       hello[:len(hello)-1],
		"bad mode":        append([]byte{typeHello, 0, 0, 0, 15, 3}, hello[6:20]...),
		"zero qps":        {typeHello, 0, 0, 0, 18, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
		"65 qps":          {typeHello, 0, 0, 0, 18, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 65},
		"no transport":    {typeHello, 0, 0, 0, 18, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		"ofi empty addr":  {typeHello, 0, 0, 0, 21, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 'x', 0, 1, 0, 0},
		"ofi long addr":   {typeHello, 0, 0, 0, 21, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 'x', 0, 1, 1, 1},
		"bad bool":        {typeEnd, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 2},
		"trailing":        {typeCredit, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"bad utf8":        {typeReject, 0, 0, 0, 3, 0, 1, 0xff},
		"257 keywords":    append(bytes.Clone(hello[:len(hello)-2]), 0x01, 0x01),
		"table too large": append(enc(Accept{Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: verbs, QPs: qps(1)})[:len(enc(Accept{Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: verbs, QPs: qps(1)}))-4], 0xff, 0xff, 0xff, 0xff),
	}
	for name, b := range cases {
		if _, err := ReadMessage(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name != "truncated" && !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v does not wrap ErrProtocol", name, err)
		}
	}
	if _, err := encode(Posted{QP: MaxQPs, Upto: 1}); !errors.Is(err, ErrProtocol) {
		t.Errorf("posted on queue pair %d: %v", MaxQPs, err)
	}
	// Semantic checks on Accept.
	for name, m := range map[string]Accept{
		"send with table":      {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: verbs, QPs: qps(1), Regions: []Region{{Len: 1}}},
		"whole ring too short": {Mode: ModeWrite, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 2, BufSize: 8, Fabric: verbs, QPs: qps(1), Regions: []Region{{Len: 8}}},
		"per block count":      {Mode: ModeWrite, MRMode: MRPerBlock, MsgBytes: 1, NBufs: 2, BufSize: 8, Fabric: verbs, QPs: qps(1), Regions: []Region{{Len: 8}}},
		"bad mtu":              {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: verbs, QPs: []QPInfo{{QPN: 1, MTU: 1500}}},
		"verbs 64-bit key": {Mode: ModeWrite, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 8, Fabric: verbs, QPs: qps(1),
			Regions: []Region{{Len: 8, RKey: 1 << 32}}},
		"verbs with an address": {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: verbs,
			QPs: []QPInfo{{QPN: 1, MTU: 4096, Addr: []byte{1}}}},
		"ofi with a QPN":         {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: ofiTCP, QPs: []QPInfo{{QPN: 1, Addr: []byte{1}}}},
		"ofi without an address": {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: ofiTCP, QPs: []QPInfo{{}}},
		"ofi address too long": {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, Fabric: ofiTCP,
			QPs: []QPInfo{{Addr: make([]byte, MaxAddrBytes+1)}}},
		"no transport": {Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 1, NBufs: 1, BufSize: 1, QPs: qps(1)},
	} {
		if _, err := encode(m); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBlockTarget(t *testing.T) {
	t.Parallel()
	whole := Accept{Mode: ModeWrite, MRMode: MRWholeRing, NBufs: 4, BufSize: 100, Regions: []Region{{Addr: 1000, Len: 400, RKey: 9}}}
	if a, k, err := whole.BlockTarget(3); err != nil || a != 1300 || k != 9 {
		t.Fatalf("whole ring block 3 = %d %d %v", a, k, err)
	}
	per := Accept{Mode: ModeWrite, MRMode: MRPerBlock, NBufs: 2, BufSize: 100, Regions: []Region{{Addr: 5000, Len: 100, RKey: 1}, {Addr: 2000, Len: 100, RKey: 2}}}
	if a, k, err := per.BlockTarget(1); err != nil || a != 2000 || k != 2 {
		t.Fatalf("per block 1 = %d %d %v", a, k, err)
	}
	if _, _, err := per.BlockTarget(2); !errors.Is(err, ErrProtocol) {
		t.Fatalf("block outside the ring: %v", err)
	}
}

// FuzzReadMessage feeds arbitrary bytes to the handshake decoder as a
// receiver sees them (preamble, then messages): it must never panic or
// allocate beyond its limits, and whatever it accepts must survive a
// re-encode/decode round trip unchanged.
func FuzzReadMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(Preamble(), b...))
	}
	f.Add([]byte("RCAP\x00\x01")) // an older version
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		if _, err := ReadPreamble(r); err != nil {
			return
		}
		for {
			m, err := ReadMessage(r)
			if err != nil {
				return
			}
			b, err := encode(m)
			if err != nil {
				t.Fatalf("re-encode accepted %+v: %v", m, err)
			}
			m2, err := ReadMessage(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decode re-encoded %+v: %v", m, err)
			}
			if !reflect.DeepEqual(m, m2) {
				t.Fatalf("round trip changed %+v into %+v", m, m2)
			}
		}
	})
}

// Settings naming what no link can use are refused on both sides of the wire.
func TestSettingsRefusesWhatNoLinkCanUse(t *testing.T) {
	t.Parallel()
	for _, m := range []Settings{{Mode: 0, QPs: 4, MsgBytes: 4096}, {Mode: ModeSend, QPs: 0, MsgBytes: 4096}, {Mode: ModeSend, QPs: MaxQPs + 1, MsgBytes: 4096}, {Mode: ModeWrite, QPs: 1, MsgBytes: 0}} {
		if _, err := encode(m); !errors.Is(err, ErrProtocol) {
			t.Errorf("encode %+v: %v, want a protocol error", m, err)
		}
		good, _ := encode(Settings{Mode: ModeSend, QPs: 1, MsgBytes: 1, Fabric: verbs})
		b := append([]byte{}, good...)
		b[5], b[6], b[7] = byte(m.Mode), byte(m.QPs>>8), byte(m.QPs)
		b[8], b[9], b[10], b[11] = byte(m.MsgBytes>>24), byte(m.MsgBytes>>16), byte(m.MsgBytes>>8), byte(m.MsgBytes)
		if _, err := ReadMessage(bytes.NewReader(b)); !errors.Is(err, ErrProtocol) {
			t.Errorf("decode %+v: %v, want a protocol error", m, err)
		}
	}
}

// A Fabric names a known transport, and a provider exactly for ofi: a short
// printable name.
func TestFabricValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f  Fabric
		ok bool
	}{
		{verbs, true},
		{ofiTCP, true},
		{Fabric{Transport: TransportOFI, Provider: "efa"}, true},
		{Fabric{}, false},
		{Fabric{Transport: 3, Provider: "x"}, false},
		{Fabric{Transport: TransportVerbs, Provider: "efa"}, false},
		{Fabric{Transport: TransportOFI}, false},
		{Fabric{Transport: TransportOFI, Provider: "tcp ofi_rxm"}, false},
		{Fabric{Transport: TransportOFI, Provider: string(bytes.Repeat([]byte("x"), MaxProviderBytes+1))}, false},
	} {
		if err := tc.f.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok %v", tc.f, err, tc.ok)
		} else if err != nil && !errors.Is(err, ErrProtocol) {
			t.Errorf("%+v: %v does not wrap ErrProtocol", tc.f, err)
		}
	}
	if _, err := encode(Settings{Mode: ModeSend, QPs: 1, MsgBytes: 1, Fabric: Fabric{Transport: TransportOFI}}); !errors.Is(err, ErrProtocol) {
		t.Errorf("settings without a provider: %v", err)
	}
	for s, want := range map[string]Transport{"verbs": TransportVerbs, "OFI": TransportOFI, "libfabric": TransportOFI} {
		if got, err := ParseTransport(s); err != nil || got != want {
			t.Errorf("ParseTransport(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseTransport("tcp"); err == nil {
		t.Error("ParseTransport(tcp) accepted")
	}
}

// FuzzDecode feeds arbitrary payloads of every message type to the decoder,
// version 7's transport-dependent queue-pair tables and 64-bit keys
// included: it must never panic, and whatever it accepts must survive a
// re-encode/decode round trip unchanged. Corpus: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[0], b[5:])
	}
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		m, err := Decode(typ, payload)
		if err != nil {
			return
		}
		b, err := encode(m)
		if err != nil {
			t.Fatalf("re-encode accepted %+v: %v", m, err)
		}
		m2, err := Decode(b[0], b[5:])
		if err != nil {
			t.Fatalf("decode re-encoded %+v: %v", m, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed %+v into %+v", m, m2)
		}
	})
}

// TestQueuedMessagesGoOutInOneWrite: messages queued on a Conn reach the peer
// only with Flush, all in one write, in order (the receiver's credits of
// several freed blocks cost one system call); QueueCredit and QueuePosted
// queue the same frames as Queue.
func TestQueuedMessagesGoOutInOneWrite(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	k := NewConn(a)
	want := []Message{Credit{Seq: 0, Index: 5}, Credit{Seq: 1, Index: 6}, Posted{QP: 3, Upto: 67}, Posted{QP: 63, Upto: 1<<40 + 63},
		Credit{Seq: 2, Index: 7}, Credit{Seq: 1<<40 + 3, Index: 1<<31 + 1}}
	for i, c := range want {
		queue := k.Queue
		if i%2 == 1 {
			queue = func(m Message) error {
				if p, ok := m.(Posted); ok {
					return k.QueuePosted(p)
				}
				return k.QueueCredit(m.(Credit))
			}
		}
		if err := queue(c); err != nil { // net.Pipe would block a write: nothing is written yet
			t.Fatal(err)
		}
	}
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := b.Read(buf) // one Read takes exactly one Write of a net.Pipe
		got <- buf[:n]
	}()
	if err := k.Flush(); err != nil {
		t.Fatal(err)
	}
	raw := <-got
	r := bufio.NewReader(bytes.NewReader(raw))
	for i, c := range want {
		m, err := ReadMessage(r)
		if err != nil {
			t.Fatalf("message %d of the one write: %v (write of %d bytes)", i, err, len(raw))
		}
		if m != c {
			t.Fatalf("message %d: got %+v, want %+v", i, m, c)
		}
	}
	if r.Buffered() != 0 {
		t.Fatalf("%d bytes after the messages", r.Buffered())
	}
	if err := k.QueuePosted(Posted{QP: MaxQPs}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("posted on queue pair %d: %v", MaxQPs, err)
	}
}
