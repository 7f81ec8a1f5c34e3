//go:build linux && cgo && !vm

package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testio"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/ofifabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// The engine end to end over real libfabric on the host: capture.Run and
// sender.Run with the ofi fabric, tcp;ofi_rxm on loopback (domain lo,
// 127.0.0.1) and shm, the reader verifying every byte. Host tier only (not
// in the vm build): the VM tier runs the same matrix over verbs;ofi_rxm
// through the CLI (ofi_vm_test.go).

var (
	ofiTCP = ofifabric.Config{Provider: "tcp;ofi_rxm", Domain: "lo", Node: "127.0.0.1"}
	ofiSHM = ofifabric.Config{Provider: "shm"}
	// ofiTCPLen carries write mode's lengths in length messages, as the
	// providers with 4 bytes of CQ data (verbs;ofi_rxm, efa) do.
	ofiTCPLen = ofifabric.Config{Provider: "tcp;ofi_rxm", Domain: "lo", Node: "127.0.0.1", LengthMessages: true}
)

// ofiLeakCheck fails the test when libfabric objects outlive it.
func ofiLeakCheck(t *testing.T) {
	t.Helper()
	before := ofi.Live()
	t.Cleanup(func() {
		if got := ofi.Live(); got != before {
			t.Errorf("libfabric objects leaked: %+v, before the test %+v", got, before)
		}
	})
}

// ofiRig is a receiver (capture.Run) over the ofi fabric on a test ring.
type ofiRig struct {
	h    *dada.HDU
	tr   *Tracker
	errc chan error
	addr string
	prov ofifabric.Config
}

// runOFI starts Run over ring h with the ofi fabric prov, registering the
// ring in mr, and waits until it listens.
func runOFI(t *testing.T, h *dada.HDU, rc ReceiverConfig, prov ofifabric.Config, mr fabric.MRMode) *ofiRig {
	t.Helper()
	r := &ofiRig{h: h, tr: NewTracker(), errc: make(chan error, 1), prov: prov}
	c := Capture{
		Ring: dada.Config{Key: h.Key()}, Connect: dada.ConnectOptions{Contiguous: mr != fabric.MRPerBlock},
		Listen: endpoint.Listen{Addr: "127.0.0.1:0"}, Getenv: noEnv, Transport: wire.TransportOFI,
		Receiver: rc, Status: r.tr,
		Open: func(_ fabric.DeviceConfig, ring *dada.Ring) (fabric.ReceiverFabric, error) {
			cfg := prov
			cfg.Mode = rc.Mode
			return ofifabric.NewReceiver(cfg, ring, mr, func(string) {})
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.errc <- Run(ctx, c) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.errc; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		r.errc <- nil
	})
	deadline := time.Now().Add(30 * time.Second)
	for s := r.tr.Snapshot(); s.State != statusdoc.StateListening; s = r.tr.Snapshot() {
		if time.Now().After(deadline) || s.State == statusdoc.StateFailed {
			t.Fatalf("Run did not listen: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.addr = "127.0.0.1:" + strconv.Itoa(r.tr.Snapshot().Endpoint.Port)
	return r
}

// send streams cfg to the rig with sender.Run over the ofi fabric prov
// (Provider empty: the receiver's).
func (r *ofiRig) send(ctx context.Context, cfg sender.Config, prov ofifabric.Config) (sender.Result, error) {
	return sender.Run(ctx, sender.Stream{
		Connect: r.addr, Config: cfg, Fabric: wire.Fabric{Transport: wire.TransportOFI, Provider: prov.Provider}, Domain: prov.Domain,
		Open: func(dev fabric.DeviceConfig, mode wire.Mode, n uint64) (fabric.SenderFabric, error) {
			return ofifabric.NewSender(ofifabric.Config{Provider: dev.Provider, Domain: dev.Domain, Node: prov.Node, Mode: mode, LengthMessages: prov.LengthMessages, Log: cfg.Log}, n)
		},
	})
}

// wait returns Run's result once it has stopped by itself.
func (r *ofiRig) wait(t *testing.T) error {
	t.Helper()
	err := <-r.errc
	r.errc <- nil // for the cleanup
	return err
}

// Write mode with its lengths in length messages (as on verbs;ofi_rxm and
// efa), WholeRing and PerBlock, 1, 4 and 16 endpoints, a stream ending off
// the block and message boundaries.
func TestOFILengthMessages(t *testing.T) {
	const bs, msg = 65536, 8192
	for _, mr := range []fabric.MRMode{fabric.MRWholeRing, fabric.MRPerBlock} {
		for _, qps := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("%v/%d", mr, qps), func(t *testing.T) {
				ofiLeakCheck(t)
				ofiObservation(t, wire.ModeWrite, mr, qps, bs, msg, uint64(5*bs+3*msg+1234), ofiTCPLen)
			})
		}
	}
}

// Write and send modes, WholeRing and PerBlock registration, 1, 4 and 16
// endpoints: a stream ending off a block boundary lands whole and in order,
// and status names the transport and provider.
func TestOFIMatrix(t *testing.T) {
	const bs, msg = 65536, 8192
	for _, mode := range []wire.Mode{wire.ModeWrite, wire.ModeSend} {
		for _, mr := range []fabric.MRMode{fabric.MRWholeRing, fabric.MRPerBlock} {
			for _, qps := range []int{1, 4, 16} {
				t.Run(fmt.Sprintf("%v/%v/%d", mode, mr, qps), func(t *testing.T) {
					ofiLeakCheck(t)
					total := uint64(5*bs + 3*msg + 1234) // off the block and message boundaries
					obs := ofiObservation(t, mode, mr, qps, bs, msg, total, ofiTCP)
					if obs.Regions != map[fabric.MRMode]int{fabric.MRWholeRing: 1, fabric.MRPerBlock: 8}[mr] {
						t.Errorf("registration %+v, want %v", obs.MemoryRegistration, mr)
					}
				})
			}
		}
	}
}

// A stream ending on a block boundary, and the shm provider (one host).
func TestOFIBlockBoundaryAndSHM(t *testing.T) {
	for _, c := range []struct {
		name string
		prov ofifabric.Config
		mode wire.Mode
	}{
		{"tcp/write", ofiTCP, wire.ModeWrite},
		{"tcp/write/length-messages", ofiTCPLen, wire.ModeWrite},
		{"shm/write", ofiSHM, wire.ModeWrite},
		{"shm/send", ofiSHM, wire.ModeSend},
	} {
		t.Run(c.name, func(t *testing.T) {
			ofiLeakCheck(t)
			ofiObservation(t, c.mode, fabric.MRAuto, 4, 65536, 8192, 6*65536, c.prov)
		})
	}
}

// The sender's endpoints driven by threads of their own (ofi.LaneSet), two
// endpoints to a thread and one each, in both modes, with length messages
// and over shm (whose queues have no wait fds): every byte lands in order.
func TestOFIEndpointThreads(t *testing.T) {
	for _, c := range []struct {
		name string
		prov ofifabric.Config
		mode wire.Mode
	}{
		{"tcp/write", ofiTCP, wire.ModeWrite},
		{"tcp/send", ofiTCP, wire.ModeSend},
		{"tcp/write/length-messages", ofiTCPLen, wire.ModeWrite},
		{"shm/write", ofiSHM, wire.ModeWrite},
	} {
		for _, cpus := range [][]int{{0, 0}, {0, 0, 0, 0}} {
			t.Run(fmt.Sprintf("%s/%d-threads", c.name, len(cpus)), func(t *testing.T) {
				ofiLeakCheck(t)
				ofiObservationPosting(t, c.mode, fabric.MRAuto, 4, 65536, 8192, uint64(7*65536+3*8192+1234), c.prov, cpus)
			})
		}
	}
}

type ofiObs struct {
	statusdoc.Status
	statusdoc.MemoryRegistration
}

// ofiObservation runs one observation of total bytes through a ring of 8
// blocks of bs bytes and checks the reader's and the status's account.
func ofiObservation(t *testing.T, mode wire.Mode, mr fabric.MRMode, qps int, bs, msg, total uint64, prov ofifabric.Config) ofiObs {
	t.Helper()
	return ofiObservationPosting(t, mode, mr, qps, bs, msg, total, prov, nil)
}

// ofiObservationPosting is ofiObservation with the sender posting from a
// thread per CPU of postCPUs (none: from its loop).
func ofiObservationPosting(t *testing.T, mode wire.Mode, mr fabric.MRMode, qps int, bs, msg, total uint64, prov ofifabric.Config, postCPUs []int) ofiObs {
	t.Helper()
	h := testRing(t, 8, bs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 11, 0)
	r := runOFI(t, h, ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, StopObservations: 1, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}}, prov, mr)
	var log testio.Buffer
	res, err := r.send(ctx, sender.Config{Bytes: total, Source: sender.PatternSource{Seed: 11}, PostCPUs: postCPUs, Log: slog.New(slog.NewTextHandler(&log, nil))},
		ofifabric.Config{Node: prov.Node, LengthMessages: prov.LengthMessages})
	if err != nil || !res.Complete || res.Bytes != total || res.QPs != qps || res.Mode != mode {
		t.Fatalf("send: %+v %v", res, err)
	}
	if opened := "Opened the libfabric domain"; !strings.Contains(log.String(), opened) || !strings.Contains(log.String(), ofi.EnvInEffect()) {
		t.Errorf("the sender's log does not say %q with the libfabric environment %q:\n%s", opened, ofi.EnvInEffect(), log.String())
	}
	if started := fmt.Sprintf("Started the endpoints' threads: each posts to and reads the completion queue of its endpoints\" threads=%d", len(postCPUs)); len(postCPUs) > 0 && !strings.Contains(log.String(), started) {
		t.Errorf("the sender's log does not say %q:\n%s", started, log.String())
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := <-reads; len(got) != 1 || got[0].bytes != total || got[0].mismatches != 0 || got[0].err != nil {
		t.Fatalf("reader: %+v", got)
	}
	st := r.tr.Snapshot()
	if st.State != statusdoc.StateFinished || st.BytesReceived != total || st.Transport != "ofi" || st.Provider != prov.Provider || st.IncompleteObs != 0 {
		t.Fatalf("status %+v", st)
	}
	return ofiObs{Status: st, MemoryRegistration: st.MemoryRegistration}
}

// Two observations, the second read by a reader that holds the receiver
// back (a ring of 4 blocks, each read slowly): nothing is lost.
func TestOFITwoObservationsSlowReader(t *testing.T) {
	ofiLeakCheck(t)
	const bs, total = 65536, 20*65536 + 100
	h := testRing(t, 4, bs)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 2, 3, 20*time.Millisecond)
	r := runOFI(t, h, ReceiverConfig{Mode: wire.ModeWrite, QPs: 4, MsgBytes: 16384, StopObservations: 2, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}}, ofiTCP, fabric.MRAuto)
	for i := range 2 {
		res, err := r.send(ctx, sender.Config{Bytes: total, Source: sender.PatternSource{Seed: 3}}, ofiTCP)
		if err != nil || !res.Complete {
			t.Fatalf("send %d: %+v %v", i, res, err)
		}
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := <-reads
	if len(got) != 2 {
		t.Fatalf("reader: %+v", got)
	}
	for i, o := range got {
		if o.bytes != total || o.mismatches != 0 || o.err != nil {
			t.Errorf("observation %d: %+v", i, o)
		}
	}
	if st := r.tr.Snapshot(); st.Observations != 2 || st.HeldBackSeconds == 0 {
		t.Errorf("status: %d observations, held back %v s (the slow reader should have held the receiver back)", st.Observations, st.HeldBackSeconds)
	}
}

// A sender on another provider, or another transport, with another number
// of endpoints, or garbage, is refused naming both sides, and the receiver
// serves the next sender.
func TestOFIHandshakeMismatches(t *testing.T) {
	ofiLeakCheck(t)
	h := testRing(t, 4, 65536)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, 1, 9, 0)
	r := runOFI(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 4, MsgBytes: 4096, StopObservations: 1, Header: ObservationHeaders{Template: []byte("HDR_VERSION 1.0\n")}}, ofiTCP, fabric.MRAuto)

	_, err := r.send(ctx, sender.Config{Bytes: 4096, Source: sender.PatternSource{Seed: 9}}, ofiSHM)
	var rej *sender.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Message, `sender uses transport ofi, provider "shm", this receiver uses transport ofi, provider "tcp;ofi_rxm"`) {
		t.Errorf("provider mismatch: %v", err)
	}
	addrs := func(n int) []wire.QPInfo {
		out := make([]wire.QPInfo, n)
		for i := range out {
			out[i].Addr = []byte{2, 0, 0, byte(i + 1), 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
		}
		return out
	}
	verbsQPs := []wire.QPInfo{{QPN: 1, MTU: 4096}, {QPN: 2, MTU: 4096}, {QPN: 3, MTU: 4096}, {QPN: 4, MTU: 4096}}
	for _, c := range []struct {
		name     string
		preamble []byte
		hello    wire.Message
		want     string
	}{
		{"transport", wire.Preamble(), wire.Hello{Mode: wire.ModeSend, MsgBytes: 4096, Fabric: wire.Fabric{Transport: wire.TransportVerbs}, QPs: verbsQPs},
			`sender uses transport verbs, this receiver uses transport ofi, provider "tcp;ofi_rxm"`},
		{"qps", wire.Preamble(), wire.Hello{Mode: wire.ModeSend, MsgBytes: 4096, Fabric: wire.Fabric{Transport: wire.TransportOFI, Provider: "tcp;ofi_rxm"}, QPs: addrs(2)},
			"sender asked for 2 queue pairs, this receiver uses 4"},
		{"garbage", []byte("GET / HTTP/1.1\r\n\r\n"), nil, "not a ringcap sender"},
		{"version 6", []byte("RCAP\x00\x06"), nil, "handshake version 6 is not supported"},
	} {
		if m := rawHello(t, r.addr, c.preamble, c.hello); !strings.Contains(fmt.Sprint(m), c.want) {
			t.Errorf("%s: answer %+v, want a rejection containing %q", c.name, m, c.want)
		}
	}
	res, err := r.send(ctx, sender.Config{Bytes: 100000, Source: sender.PatternSource{Seed: 9}}, ofiTCP)
	if err != nil || !res.Complete {
		t.Fatalf("the good sender after the refused ones: %+v %v", res, err)
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := <-reads; len(got) != 1 || got[0].bytes != 100000 || got[0].mismatches != 0 {
		t.Fatalf("reader: %+v", got)
	}
}

// rawHello opens a handshake with preamble and, after the receiver's
// Settings, hello; it returns the receiver's answer.
func rawHello(t *testing.T, addr string, preamble []byte, hello wire.Message) wire.Message {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	k := wire.NewConn(c)
	if _, err := c.Write(preamble); err != nil {
		t.Fatal(err)
	}
	m, err := k.Recv()
	if err != nil {
		t.Fatalf("read settings: %v", err)
	}
	if s, ok := m.(wire.Settings); ok && hello != nil {
		if s.Fabric != (wire.Fabric{Transport: wire.TransportOFI, Provider: "tcp;ofi_rxm"}) {
			t.Errorf("settings name %v", s.Fabric)
		}
		if err := k.Send(hello); err != nil {
			t.Fatal(err)
		}
		if m, err = k.Recv(); err != nil {
			t.Fatalf("read answer: %v", err)
		}
	}
	return m
}

// A reader stopped before a send-mode stream starts holds the receiver back
// over tcp;ofi_rxm too: status shows the hold once every block has landed,
// and nothing is lost when the reader goes on.
func TestOFIStoppedReaderHoldsASendModeStreamBack(t *testing.T) {
	ofiLeakCheck(t)
	const nbufs, bufsz, msg, qps = 8, 1 << 20, 64 << 10, 4
	const total = 4 * nbufs * bufsz
	h := testRing(t, nbufs, bufsz)
	release := make(chan struct{})
	letGo := sync.OnceFunc(func() { close(release) })
	readBytes := stoppedReader(t, h, release)
	r := runOFI(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: qps, MsgBytes: msg, StopObservations: 1}, ofiTCP, fabric.MRWholeRing)
	t.Cleanup(letGo) // a failed run lets the reader go before the receiver stops
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type sent struct {
		res sender.Result
		err error
	}
	done := make(chan sent, 1)
	go func() {
		res, err := r.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: qps, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 1}}, ofiTCP)
		done <- sent{res, err}
	}()
	st := r.tr.Snapshot()
	for st.HeldBackSince == "" && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		st = r.tr.Snapshot()
	}
	if st.HeldBackSince == "" {
		t.Fatalf("no hold reported while the reader is stopped: bytes %d, blocks %d", st.BytesReceived, st.BlocksFilled)
	}
	letGo()
	s := <-done
	if s.err != nil || !s.res.Complete || s.res.HeldBackSeconds <= 0 {
		t.Fatalf("send %+v: %v", s.res, s.err)
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := <-readBytes; n != total {
		t.Fatalf("reader read %d bytes, want %d", n, total)
	}
}
