package wire

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"testing"
	"time"
)

// handshakeBytes is one golden example (goldenMessages) and its exact bytes on the wire.
type handshakeBytes struct{ name, hex string }

// sharedBytes are the messages versions 7 and 8 both have, which they encode identically
// (docs/wire-protocol.md, "Versions and compatibility"), with the golden examples' values.
// They are written out here, apart from the specification's examples, so that an encoding
// change fails for every version that still accepts the message.
var sharedBytes = []handshakeBytes{
	{"settings", "08 0000000a  01 0002 00010000  01 0000"},
	{"settings-ofi", "08 00000015  02 0001 00100000  02 000b 7463703b6f66695f72786d"},
	{"hello", `01 00000064  01 00010000 0000000040000000  01 0000  0002
		00000123 0000abcd 0000 00000000000000000000ffffc0a8010a 00001000
		00000124 003c0ffe 0000 00000000000000000000ffffc0a8010a 00001000
		0001 0006 534f55524345 000a 4a303433372d34373135`},
	{"hello-ofi", `01 00000031  02 00100000 0000000000000000  02 000b 7463703b6f66695f72786d
		0001 0010 02004a3bc0a8010a0000000000000000  0000`},
	{"accept-send", `02 00000057  01 01 00010000 00000008 0000000000100000  01 0000  0002
		00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
		00000457 00654321 0000 00000000000000000000ffffc0a80114 00000400
		00000000`},
	{"accept-write", `02 00000051  02 01 00010000 00000008 0000000000100000  01 0000  0001
		00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
		00000001 00007f3a40000000 0000000000800000 00000000001a2b3c`},
	{"accept-perblock", `02 00000069  02 02 00001000 00000002 0000000000002000  01 0000  0001
		00000456 00123456 0000 00000000000000000000ffffc0a80114 00000400
		00000002 00007f3a40000000 0000000000002000 0000000000000011
		00007f3a40200000 0000000000002000 0000000000000012`},
	{"reject", `03 0000003e  003c
		73656e6465722061736b656420666f722038207175657565207061697273
		2c20746869732072656365697665722075736573203220282d2d71707329`},
	{"credit", "04 0000000c  0000000000000005 00000003"},
	{"held", "07 00000011  01 000000009502f900 0000000059682f00"},
	{"end", "05 00000009  0000000040000000 01"},
	{"done", "06 00000013  0000000040000000 0000000000000400 01 0000"},
	{"done-incomplete", `06 00000043  0000000000300000 0000000000000003 00 0030
		73656e64657220646973636f6e6e6563746564206265666f72652074686520656e64206f66207468652073747265616d`},
}

// versionBytes pins every version a receiver accepts: the preamble that opens it and every
// message it has. Version 8 added Posted (type 9).
var versionBytes = map[uint16]struct {
	preamble string
	messages []handshakeBytes
}{
	7: {"52434150 0007", sharedBytes},
	8: {"52434150 0008", append(slices.Clip(sharedBytes), handshakeBytes{"posted", "09 0000000a  0001 0000000000000101"})},
}

// Each protocol version a receiver accepts (MinProtocolVersion..ProtocolVersion) has its
// bytes pinned, and a receiver's connection speaking it takes and sends exactly those bytes
// for the golden examples' messages; a sender opens with the current version's preamble.
// Round trips and fuzzing cannot catch an encoding change; this can.
func TestHandshakeBytesPerVersion(t *testing.T) {
	t.Parallel()
	for v := MinProtocolVersion; v <= ProtocolVersion; v++ {
		if _, ok := versionBytes[uint16(v)]; !ok {
			t.Errorf("version %d, which a receiver accepts, has no pinned bytes: add them to versionBytes", v)
			continue
		}
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { checkVersionBytes(t, uint16(v)) })
	}
	for v := range versionBytes {
		if v < MinProtocolVersion || v > ProtocolVersion {
			t.Errorf("versionBytes pins version %d, which a receiver no longer accepts: drop it", v)
		}
	}
	if want := unhex(t, "preamble", versionBytes[ProtocolVersion].preamble); !bytes.Equal(Preamble(), want) {
		t.Errorf("a sender's preamble is %x, want version %d's %x", Preamble(), ProtocolVersion, want)
	}
}

// checkVersionBytes opens a receiver's connection with version v's preamble and checks
// every pinned message both ways, and that the pinned messages cover v's message types.
func checkVersionBytes(t *testing.T, v uint16) {
	pinned := versionBytes[v]
	k, peer := connAt(t, unhex(t, "preamble", pinned.preamble), v)
	types := map[byte]bool{}
	for _, p := range pinned.messages {
		msg, want := goldenMessage(t, p.name), unhex(t, p.name, p.hex)
		types[msg.msgType()] = true
		if got := recvBytes(t, k, peer, want); !reflect.DeepEqual(got, msg) {
			t.Errorf("%s: version %d's bytes decode to %+v, want %+v", p.name, v, got, msg)
		}
		for how, send := range senders(k, msg) {
			if got := sentBytes(t, peer, len(want), send); !bytes.Equal(got, want) {
				t.Errorf("%s by %s at version %d: sent\n%x\nwant\n%x", p.name, how, v, got, want)
			}
		}
	}
	for typ := typeHello; typ <= typePosted; typ++ {
		if since(typ) <= v && !types[typ] {
			t.Errorf("version %d has message type %d, but no pinned bytes for it", v, typ)
		}
	}
}

// connAt returns a receiver's connection that has read preamble (version v) from peer.
func connAt(t *testing.T, preamble []byte, v uint16) (*Conn, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	deadline := time.Now().Add(10 * time.Second)
	_ = client.SetDeadline(deadline)
	_ = server.SetDeadline(deadline)
	go func() { _, _ = client.Write(preamble) }()
	k := NewConn(server)
	if got, err := k.ReadPreamble(); err != nil || got != v || k.Version() != v {
		t.Fatalf("read version %d's preamble %x: %d, %v", v, preamble, got, err)
	}
	return k, client
}

// recvBytes has peer write b and returns what k reads from it.
func recvBytes(t *testing.T, k *Conn, peer net.Conn, b []byte) Message {
	t.Helper()
	wrote := make(chan error, 1)
	go func() { _, err := peer.Write(b); wrote <- err }()
	m, err := k.Recv()
	if err != nil {
		t.Fatalf("receive %x: %v", b, err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write %x: %v", b, err)
	}
	return m
}

// senders are the ways a connection puts msg on the wire: Send, and for credits and grants
// the queued fast paths the engines use.
func senders(k *Conn, msg Message) map[string]func() error {
	out := map[string]func() error{"Send": func() error { return k.Send(msg) }}
	switch m := msg.(type) {
	case Credit:
		out["QueueCredit"] = func() error { return flushAfter(k, k.QueueCredit(m)) }
	case Posted:
		out["QueuePosted"] = func() error { return flushAfter(k, k.QueuePosted(m)) }
	}
	return out
}

func flushAfter(k *Conn, err error) error {
	if err != nil {
		return err
	}
	return k.Flush()
}

// sentBytes runs send and returns the n bytes peer reads.
func sentBytes(t *testing.T, peer net.Conn, n int, send func() error) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, n)
		_, _ = io.ReadFull(peer, b)
		got <- b
	}()
	if err := send(); err != nil {
		t.Fatalf("send: %v", err)
	}
	return <-got
}
