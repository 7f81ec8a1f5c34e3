package ofifabric

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Lacks names what a provider's answer lacks for each transfer mode.
func TestLacks(t *testing.T) {
	all := ofi.OrderSAS | ofi.OrderWAW
	good := ofi.Info{Provider: "tcp;ofi_rxm", Domain: "lo", Caps: ofi.CapMsg | ofi.CapRMA, CQDataSize: 8, TxMsgOrder: all, RxMsgOrder: all}
	noRMA, noData, noSAS, noWAW := good, good, good, good
	noRMA.Caps = ofi.CapMsg
	noData.CQDataSize = 0
	noSAS.RxMsgOrder = ofi.OrderWAW
	noWAW.TxMsgOrder = ofi.OrderSAS
	efa := good
	efa.CQDataSize = 4
	efa.TxMsgOrder |= ofi.OrderSAW
	efa.RxMsgOrder |= ofi.OrderSAW
	efaNoSAW := efa
	efaNoSAW.RxMsgOrder = all
	for _, c := range []struct {
		name string
		mode wire.Mode
		info ofi.Info
		want string // "" or a part of the answer
	}{
		{"write", wire.ModeWrite, good, ""},
		{"send", wire.ModeSend, good, ""},
		{"4 bytes of CQ data", wire.ModeWrite, efa, ""},
		{"4 bytes of CQ data, no send after write", wire.ModeWrite, efaNoSAW, "message order [FI_ORDER_WAW FI_ORDER_SAW]"},
		{"send with 4 bytes of CQ data ignores send after write", wire.ModeSend, efaNoSAW, ""},
		{"write without RMA", wire.ModeWrite, noRMA, "cannot carry write mode: it lacks FI_RMA"},
		{"send without RMA", wire.ModeSend, noRMA, ""},
		{"no CQ data", wire.ModeSend, noData, "4 bytes of remote CQ data for the immediate (cq_data_size 0)"},
		{"send unordered", wire.ModeSend, noSAS, "message order [FI_ORDER_SAS] (it keeps [FI_ORDER_WAW FI_ORDER_SAS] transmitting, [FI_ORDER_WAW] receiving)"},
		{"write unordered", wire.ModeWrite, noWAW, "message order [FI_ORDER_WAW]"},
		{"send ignores write order", wire.ModeSend, noWAW, ""},
	} {
		got := Lacks(c.mode, c.info)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if got != "" && !strings.Contains(got, `provider "tcp;ofi_rxm" (domain "lo")`) {
			t.Errorf("%s: %q does not name the provider", c.name, got)
		}
	}
}

// A signalled transmit completion reaches the engine only once every
// operation posted before it has completed, whatever order libfabric
// completes them in; unsignalled ones never do.
func TestTxOrderReleasesInPostingOrder(t *testing.T) {
	var tx txOrder
	for i, sig := range []bool{false, true, false, true} {
		if seq := tx.push(uint64(100+i), sig); seq != uint64(i) {
			t.Fatalf("push %d: sequence %d", i, seq)
		}
	}
	var out []fabric.Completion
	out = tx.complete(3, 2, out) // the last one first: nothing is released
	out = tx.complete(1, 2, out)
	if len(out) != 0 {
		t.Fatalf("released %+v before operation 0 completed", out)
	}
	out = tx.complete(0, 2, out) // 0, 1 done: signalled 1 released
	if want := []fabric.Completion{{ID: 101, QP: 2}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("after 0: %+v, want %+v", out, want)
	}
	out = tx.complete(2, 2, out[:0]) // 2, 3 done: signalled 3 released
	if want := []fabric.Completion{{ID: 103, QP: 2}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("after 2: %+v, want %+v", out, want)
	}
	if out = tx.complete(2, 2, out[:0]); len(out) != 0 || len(tx.pend) != 0 || tx.head != 4 {
		t.Fatalf("a stale completion: %+v, pending %+v head %d", out, tx.pend, tx.head)
	}
	tx.push(200, true)
	tx.push(201, true)
	tx.drop(1) // not posted
	if out = tx.complete(4, 0, out[:0]); !reflect.DeepEqual(out, []fabric.Completion{{ID: 200}}) || len(tx.pend) != 0 {
		t.Fatalf("after a partial post: %+v, pending %+v", out, tx.pend)
	}
}

// A write's length rides in the upper half of 8-byte CQ data, whatever the
// completion's len says; with less, in a length message read from the word
// its receive was posted into, and a remote write's immediate (whose length
// is unknown) is an error, never trusted.
func TestWriteLengthNeverFromTheCompletion(t *testing.T) {
	wide := &endpoint{recv: true, wideData: true, qps: []*qp{{}, {}}}
	wide.translate(1, ofi.Completion{Flags: ofi.CapRemoteWrite, Data: writeData(true, 0xabcdef, 1234), Len: 8192, HasData: true})
	if want := []fabric.Completion{{QP: 1, Recv: true, Bytes: 1234, Imm: 0xabcdef}}; !reflect.DeepEqual(wide.qps[1].stash, want) {
		t.Errorf("wide: %+v, want %+v", wide.qps[1].stash, want)
	}
	if d := writeData(false, 0xabcdef, 1234); d != 0xabcdef {
		t.Errorf("narrow CQ data %#x", d)
	}
	w := &lenWords{buf: make([]byte, 2*2*lenSlot), slots: 2}
	narrow := &endpoint{recv: true, qps: []*qp{{}, {}}, lenRx: &lenRx{w: w, free: [][]int{{0, 1}, {2, 3}}, ids: make([]uint64, 4)}}
	s, err := narrow.lenRx.take(1, 77)
	if err != nil {
		t.Fatal(err)
	}
	w.put(s, 1234)
	narrow.translate(1, ofi.Completion{ID: uint64(s), Flags: ofi.CapRecv, Data: 0xabcdef, HasData: true, Len: lenBytes})
	narrow.translate(1, ofi.Completion{Flags: ofi.CapRemoteWrite, Data: 5, HasData: true, Len: 8192})
	if got := narrow.qps[1].stash; len(got) != 2 || got[0] != (fabric.Completion{ID: 77, QP: 1, Recv: true, Bytes: 1234, Imm: 0xabcdef}) {
		t.Fatalf("narrow: %+v", got)
	}
	if e := narrow.qps[1].stash[1].Err; e == nil || !strings.Contains(e.Error(), "a remote write carried immediate 5 where its length travels in a length message") {
		t.Errorf("a remote write with an immediate: %v", e)
	}
	if len(narrow.lenRx.free[1]) != 2 {
		t.Errorf("the word was not freed: %v", narrow.lenRx.free)
	}
	for _, k := range []int{0, 1} {
		if _, err := narrow.lenRx.take(0, 1); err != nil {
			t.Fatalf("take %d: %v", k, err)
		}
	}
	if _, err := narrow.lenRx.take(0, 1); err == nil || !strings.Contains(err.Error(), "endpoint 0: more than 2 receives posted for length messages") {
		t.Errorf("a third receive on endpoint 0: %v", err)
	}
}
