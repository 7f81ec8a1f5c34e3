//go:build linux && cgo

package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

var tcp = Config{Provider: "tcp;ofi_rxm", Domain: "lo", Node: "127.0.0.1"}

// mmapRing is a fabric.Ring of n blocks of bs bytes in one anonymous
// mapping (contiguous).
type mmapRing struct {
	mem    []byte
	n, bs  int
	broken bool // report the blocks as not contiguous
}

func newRing(t testing.TB, n, bs int) *mmapRing {
	t.Helper()
	m, err := unix.Mmap(-1, 0, n*bs, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(m) })
	return &mmapRing{mem: m, n: n, bs: bs}
}

func (r *mmapRing) NBufs() int         { return r.n }
func (r *mmapRing) BufSize() int       { return r.bs }
func (r *mmapRing) PageSize() int      { return 4096 }
func (r *mmapRing) Block(i int) []byte { return r.mem[i*r.bs : (i+1)*r.bs] }
func (r *mmapRing) BlockAddr(i int) uintptr {
	return uintptr(unsafe.Pointer(&r.mem[i*r.bs]))
}

func (r *mmapRing) Contiguous() ([]byte, bool, string) {
	if r.broken {
		return nil, false, "test ring reported as scattered"
	}
	return r.mem, true, ""
}

// Registration follows the shared rule and describes the regions as the
// domain addresses them; every libfabric object is closed on Close, which
// may be called again.
func TestReceiverRegistersByTheSharedRuleAndClosesEverything(t *testing.T) {
	before := ofi.Live()
	for _, c := range []struct {
		mode    fabric.MRMode
		broken  bool
		want    wire.MRMode
		regions int
		reason  string
	}{
		{fabric.MRAuto, false, wire.MRWholeRing, 1, "blocks contiguous"},
		{fabric.MRAuto, true, wire.MRPerBlock, 4, "test ring reported as scattered"},
		{fabric.MRPerBlock, false, wire.MRPerBlock, 4, "per-block registration requested"},
	} {
		ring := newRing(t, 4, 8192)
		ring.broken = c.broken
		cfg := tcp
		cfg.Mode = wire.ModeWrite
		var line string
		r, err := NewReceiver(cfg, ring, c.mode, func(l string) { line = l })
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("regions=%d bytes=%d (%s) with libfabric provider \"tcp;ofi_rxm\" domain \"lo\"", c.regions, 4*8192, c.reason); !strings.Contains(line, want) ||
			!strings.HasSuffix(line, ", environment "+ofi.EnvInEffect()) {
			t.Errorf("registration line %q, want it to contain %q and end in the libfabric environment", line, want)
		}
		mode, regions, st := r.Registration()
		if mode != c.want || len(regions) != c.regions || st.Regions != c.regions || st.Reason != c.reason || st.Bytes != 4*8192 {
			t.Errorf("%v: %v %+v %+v", c.mode, mode, regions, st)
		}
		if f := r.Fabric(); f != (wire.Fabric{Transport: wire.TransportOFI, Provider: "tcp;ofi_rxm"}) {
			t.Errorf("fabric %v", f)
		}
		ep, err := r.Open(context.Background(), fabric.EndpointConfig{QPs: 3, SendDepth: 1, RecvDepth: 8})
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range ep.Local() {
			if len(q.Addr) == 0 || q.QPN != 0 {
				t.Errorf("endpoint %d: %+v", i, q)
			}
		}
		if got := ofi.Live(); got.Endpoints != before.Endpoints+3 || got.CQs != before.CQs+3 || got.AVs != before.AVs+3 {
			t.Errorf("live objects with 3 endpoints open: %+v", got)
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(ep.Close(), r.Close(), r.Close()); err != nil {
			t.Fatal(err)
		}
		if got := ofi.Live(); got != before {
			t.Fatalf("after Close: %+v, before %+v", got, before)
		}
	}
	ring := newRing(t, 2, 8192)
	ring.broken = true
	if _, err := NewReceiver(Config{Provider: "tcp;ofi_rxm", Mode: wire.ModeSend}, ring, fabric.MRWholeRing, nil); !errors.Is(err, fabric.ErrNotContiguous) {
		t.Errorf("WholeRing over a scattered ring: %v", err)
	}
}

// A provider that does not exist, or a mode the adapter does not know, is
// refused with an error naming it; nothing stays open.
func TestOpenRefusesWhatItCannotOpen(t *testing.T) {
	before := ofi.Live()
	if _, err := NewSender(Config{Provider: "no-such-provider", Mode: wire.ModeSend}, 4096); err == nil || !strings.Contains(err.Error(), "no-such-provider") {
		t.Errorf("unknown provider: %v", err)
	}
	if _, err := NewSender(Config{Provider: "tcp;ofi_rxm"}, 4096); err == nil || !strings.Contains(err.Error(), "unknown transfer mode") {
		t.Errorf("no mode: %v", err)
	}
	s, err := NewSender(Config{Provider: "shm", Mode: wire.ModeSend}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Buffer()) != 4096 || s.Fabric().Provider != "shm" {
		t.Errorf("sender: %d-byte buffer, %v", len(s.Buffer()), s.Fabric())
	}
	if err := errors.Join(s.Close(), s.Close()); err != nil {
		t.Fatal(err)
	}
	if got := ofi.Live(); got != before {
		t.Fatalf("after Close: %+v, before %+v", got, before)
	}
}

// The receiver's endpoint sleeps until a completion may be there
// (fabric.Notifier): an armed endpoint's event comes once the sender's write
// lands, and the completion is then there to poll; everything, the waiter
// included, is gone after Close.
func TestReceiverSleepsUntilACompletion(t *testing.T) {
	before := ofi.Live()
	ring := newRing(t, 2, 8192)
	cfg := tcp
	cfg.Mode = wire.ModeWrite
	r, err := NewReceiver(cfg, ring, fabric.MRAuto, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	s, err := NewSender(cfg, 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	rep, err := r.Open(context.Background(), fabric.EndpointConfig{QPs: 2, SendDepth: 1, RecvDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	sep, err := s.Open(context.Background(), fabric.EndpointConfig{QPs: 2, SendDepth: 4, RecvDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(rep.Connect(sep.Local()), sep.Connect(rep.Local())); err != nil {
		t.Fatal(err)
	}
	n, ok := rep.(fabric.Notifier)
	if !ok {
		t.Fatal("the receiver's endpoint is not a fabric.Notifier")
	}
	if err := n.Arm(); err != nil {
		t.Fatal(err)
	}
	_, regions, _ := r.Registration()
	copy(s.Buffer(), "landed")
	sent := make(chan []fabric.Completion, 1)
	go func() { // the sender posts, and progresses its side by polling
		wr := fabric.SendWR{ID: 7, Op: fabric.OpWriteImm, Length: 6, Imm: 42, Signaled: true, RemoteAddr: regions[0].Addr + 8192, RKey: regions[0].RKey}
		if err := sep.PostSend(1, []fabric.SendWR{wr}); err != nil {
			t.Error(err)
		}
		wcs := make([]fabric.Completion, 4)
		var got []fabric.Completion
		guard := time.Now().Add(time.Minute) // a hang guard, not a speed check
		for len(got) == 0 && time.Now().Before(guard) {
			k, _ := sep.Poll(wcs)
			got = append(got, wcs[:k]...)
		}
		sent <- got
	}()
	wcs := make([]fabric.Completion, 4)
	var got []fabric.Completion
	guard := time.After(time.Minute) // a hang guard, not a speed check
	for len(got) == 0 {
		select {
		case <-n.Events():
		case <-guard:
			t.Fatal("no event for the write within a minute")
		}
		k, err := rep.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, wcs[:k]...)
		if len(got) == 0 {
			if err := n.Arm(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c := got[0]; len(got) != 1 || !c.Recv || c.QP != 1 || c.Imm != 42 || c.Bytes != 6 || c.Err != nil || string(ring.Block(1)[:6]) != "landed" {
		t.Errorf("receiver completions %+v, block 1 %q", got, ring.Block(1)[:6])
	}
	if sc := <-sent; len(sc) != 1 || sc[0].ID != 7 || sc[0].QP != 1 || sc[0].Err != nil {
		t.Errorf("sender completions %+v", sc)
	}
	if err := errors.Join(rep.Close(), sep.Close(), s.Close(), r.Close()); err != nil {
		t.Fatal(err)
	}
	if got := ofi.Live(); got != before {
		t.Fatalf("after Close: %+v, before %+v", got, before)
	}
}
