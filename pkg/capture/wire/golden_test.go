package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// golden is one documented example: a message with fixed field values and
// its bytes as docs/wire-protocol.md shows them (hex, spaced by field).
type golden struct {
	name string
	msg  Message // nil for a preamble
	hex  string
}

// exampleGID is a RoCE v2 GID: the IPv4-mapped address ::ffff:192.168.1.10.
func exampleGID(last byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 168, 14: 1, 15: last}
}

var ofiExample = Fabric{Transport: TransportOFI, Provider: "tcp;ofi_rxm"}

// goldenMessages are the examples of docs/wire-protocol.md. A send-mode
// session (2 queue pairs, 64 KiB messages, a ring of 8 blocks of 1 MiB), a
// write-mode Accept of each registration, and the ofi variants.
func goldenMessages() []golden {
	return []golden{
		{"preamble", nil, "52434150 0008"},
		{"settings", Settings{Mode: ModeSend, QPs: 2, MsgBytes: 65536, Fabric: verbs},
			"08 0000000a  01 0002 00010000  01 0000"},
		{"hello", Hello{Mode: ModeSend, MsgBytes: 65536, TotalBytes: 1 << 30, Fabric: verbs,
			QPs: []QPInfo{
				{QPN: 0x000123, PSN: 0x00abcd, GID: exampleGID(10), MTU: 4096},
				{QPN: 0x000124, PSN: 0x3c0ffe, GID: exampleGID(10), MTU: 4096},
			},
			Header: []HeaderField{{Key: "SOURCE", Value: "J0437-4715"}}},
			`01 00000064  01 00010000 0000000040000000  01 0000
			 0002
			 00000123 0000abcd 0000 00000000000000000000ffffc0a8010a 00001000
			 00000124 003c0ffe 0000 00000000000000000000ffffc0a8010a 00001000
			 0001 0006 534f55524345 000a 4a303433372d34373135`},
		{"accept-send", Accept{Mode: ModeSend, MRMode: MRWholeRing, MsgBytes: 65536, NBufs: 8, BufSize: 1 << 20, Fabric: verbs,
			QPs: []QPInfo{
				{QPN: 0x000456, PSN: 0x123456, GID: exampleGID(20), MTU: 1024},
				{QPN: 0x000457, PSN: 0x654321, GID: exampleGID(20), MTU: 1024},
			}},
			`02 00000057  01 01 00010000 00000008 0000000000100000  01 0000
			 0002
			 00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
			 00000457 00654321 0000 00000000000000000000ffffc0a80114 00000400
			 00000000`},
		{"accept-write", Accept{Mode: ModeWrite, MRMode: MRWholeRing, MsgBytes: 65536, NBufs: 8, BufSize: 1 << 20, Fabric: verbs,
			QPs:     []QPInfo{{QPN: 0x000456, PSN: 0x123456, GID: exampleGID(20), MTU: 1024}},
			Regions: []Region{{Addr: 0x7f3a40000000, Len: 8 << 20, RKey: 0x1a2b3c}}},
			`02 00000051  02 01 00010000 00000008 0000000000100000  01 0000
			 0001
			 00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
			 00000001
			 00007f3a40000000 0000000000800000 00000000001a2b3c`},
		{"accept-perblock", Accept{Mode: ModeWrite, MRMode: MRPerBlock, MsgBytes: 4096, NBufs: 2, BufSize: 8192, Fabric: verbs,
			QPs: []QPInfo{{QPN: 0x000456, PSN: 0x123456, GID: exampleGID(20), MTU: 1024}},
			Regions: []Region{
				{Addr: 0x7f3a40000000, Len: 8192, RKey: 0x11},
				{Addr: 0x7f3a40200000, Len: 8192, RKey: 0x12},
			}},
			`02 00000069  02 02 00001000 00000002 0000000000002000  01 0000
			 0001
			 00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
			 00000002
			 00007f3a40000000 0000000000002000 0000000000000011
			 00007f3a40200000 0000000000002000 0000000000000012`},
		{"reject", Reject{Message: "sender asked for 8 queue pairs, this receiver uses 2 (--qps)"},
			`03 0000003e  003c
			 73656e6465722061736b656420666f722038207175657565207061697273
			 2c20746869732072656365697665722075736573203220282d2d71707329`},
		{"credit", Credit{Seq: 5, Index: 3}, "04 0000000c  0000000000000005 00000003"},
		{"posted", Posted{QP: 1, Upto: 257}, "09 0000000a  0001 0000000000000101"},
		{"held", Held{Holding: true, Nanos: 2_500_000_000, HoldNanos: 1_500_000_000},
			"07 00000011  01 000000009502f900 0000000059682f00"},
		{"end", End{Bytes: 1 << 30, Complete: true}, "05 00000009  0000000040000000 01"},
		{"done", Done{Bytes: 1 << 30, Blocks: 1024, OK: true}, "06 00000013  0000000040000000 0000000000000400 01 0000"},
		{"done-incomplete", Done{Bytes: 3 << 20, Blocks: 3, Message: "sender disconnected before the end of the stream"},
			`06 00000043  0000000000300000 0000000000000003 00 0030
			 73656e64657220646973636f6e6e6563746564206265666f72652074686520656e64206f66207468652073747265616d`},
		{"settings-ofi", Settings{Mode: ModeWrite, QPs: 1, MsgBytes: 1 << 20, Fabric: ofiExample},
			"08 00000015  02 0001 00100000  02 000b 7463703b6f66695f72786d"},
		{"hello-ofi", Hello{Mode: ModeWrite, MsgBytes: 1 << 20, Fabric: ofiExample,
			QPs: []QPInfo{{Addr: []byte{2, 0, 0x4a, 0x3b, 192, 168, 1, 10, 0, 0, 0, 0, 0, 0, 0, 0}}}},
			`01 00000031  02 00100000 0000000000000000  02 000b 7463703b6f66695f72786d
			 0001
			 0010 02004a3bc0a8010a0000000000000000
			 0000`},
	}
}

// goldenMessage is the golden example of that name.
func goldenMessage(t *testing.T, name string) Message {
	t.Helper()
	for _, g := range goldenMessages() {
		if g.name == name {
			return g.msg
		}
	}
	t.Fatalf("no golden example %q", name)
	return nil
}

// unhex turns a documented example (hex digits, spaced and broken into
// lines by field) into bytes.
func unhex(t *testing.T, name, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// wireDoc is the specification, relative to this package.
const wireDoc = "../../../docs/wire-protocol.md"

// docExample matches an example in the specification: a marker comment,
// then a fenced block of hex.
var docExample = regexp.MustCompile("(?s)<!-- golden: ([a-z0-9-]+) -->\n```\n(.*?)```")

// docExamples reads the specification's examples by name.
func docExamples(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(wireDoc)
	if err != nil {
		t.Fatalf("read the wire specification: %v", err)
	}
	out := map[string]string{}
	for _, m := range docExample.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("%s: the specification shows two examples of that name", m[1])
		}
		out[m[1]] = m[2]
	}
	return out
}

// Every message of the current version, encoded with fixed field values,
// gives the bytes written here and in docs/wire-protocol.md, and those bytes
// decode back to the message: the specification cannot drift from the code.
func TestGoldenBytes(t *testing.T) {
	t.Parallel()
	doc := docExamples(t)
	seen := map[byte]bool{}
	for _, g := range goldenMessages() {
		want := unhex(t, g.name, g.hex)
		var got []byte
		if g.msg == nil {
			got = Preamble()
		} else {
			var err error
			if got, err = encode(g.msg); err != nil {
				t.Fatalf("%s: encode: %v", g.name, err)
			}
			seen[g.msg.msgType()] = true
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoder gives\n%x\nthe test has\n%x", g.name, got, want)
		}
		d, ok := doc[g.name]
		switch {
		case !ok:
			t.Errorf("%s: not in %s", g.name, wireDoc)
		case !bytes.Equal(unhex(t, g.name, d), got):
			t.Errorf("%s: %s shows\n%x\nthe encoder gives\n%x", g.name, wireDoc, unhex(t, g.name, d), got)
		}
		delete(doc, g.name)
		if g.msg == nil {
			continue
		}
		back, err := ReadMessage(bytes.NewReader(want))
		if err != nil || !reflect.DeepEqual(back, g.msg) {
			t.Errorf("%s: decodes to %+v, %v", g.name, back, err)
		}
	}
	for name := range doc {
		t.Errorf("%s: %s shows an example this test does not check", name, wireDoc)
	}
	for typ := typeHello; typ <= typePosted; typ++ {
		if !seen[typ] {
			t.Errorf("message type %d has no golden example", typ)
		}
	}
}

// What a version-7 sender sends and expects, as version 7's encoder (the
// commit before version 8) gives them for the golden examples' values: its
// preamble, the Settings it reads and its Hello.
const (
	v7Preamble = "52434150 0007"
	v7Settings = "08 0000000a 01 0002 00010000 01 0000"
	v7Hello    = `01 00000064 01 00010000 0000000040000000 01 0000 0002
		00000123 0000abcd 0000 00000000000000000000ffffc0a8010a 00001000
		00000124 003c0ffe 0000 00000000000000000000ffffc0a8010a 00001000
		0001 0006 534f55524345 000a 4a303433372d34373135`
)

// A receiver's connection takes a version-7 peer: it reads its preamble and
// Hello, sends it the Settings it can read, and speaks version 7 from then on:
// it refuses to send a Posted (version 8's receive grants, which a version-7
// sender cannot decode) or to take one.
func TestVersion7Peer(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	defer func() { _ = client.Close() }()
	defer func() { _ = server.Close() }()
	pre, hello, settings := unhex(t, "v7 preamble", v7Preamble), unhex(t, "v7 hello", v7Hello), unhex(t, "v7 settings", v7Settings)
	sent := make(chan error, 1)
	go func() {
		_, err := client.Write(append(pre, hello...))
		sent <- err
	}()
	k := NewConn(server)
	if v, err := k.ReadPreamble(); err != nil || v != 7 || k.Version() != 7 {
		t.Fatalf("version-7 preamble: %d, %v (connection speaks %d)", v, err, k.Version())
	}
	m, err := k.Recv()
	if err != nil {
		t.Fatalf("version-7 hello: %v", err)
	}
	if want := goldenMessage(t, "hello"); !reflect.DeepEqual(m, want) {
		t.Fatalf("version-7 hello decodes to %+v, want %+v", m, want)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(settings))
		_, _ = io.ReadFull(client, b)
		got <- b
	}()
	if err := k.Send(goldenMessage(t, "settings")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, settings) {
		t.Fatalf("settings to a version-7 peer: %x", b)
	}
	for name, send := range map[string]func() error{
		"Send":        func() error { return k.Send(Posted{QP: 1, Upto: 2}) },
		"Queue":       func() error { return k.Queue(Posted{QP: 1, Upto: 2}) },
		"QueuePosted": func() error { return k.QueuePosted(Posted{QP: 1, Upto: 2}) },
	} {
		if err := send(); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s of a Posted to a version-7 peer: %v", name, err)
		}
	}
	posted, err := encode(Posted{QP: 1, Upto: 257})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = client.Write(posted) }()
	if m, err := k.Recv(); !errors.Is(err, ErrProtocol) {
		t.Errorf("a Posted from a version-7 peer: %+v, %v", m, err)
	}
}
