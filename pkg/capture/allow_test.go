package capture

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/memfabric"
	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// A sender outside the allowlist is refused at the handshake with a message that says
// why, the refusal is counted, and the receiver goes on to serve an allowed sender.
func TestAllowlistRefusesAndKeepsServing(t *testing.T) {
	f, err := endpoint.NewSenderFilter([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if err != nil {
		t.Fatal(err)
	}
	h := testRing(t, 4, 8192)
	hs := startReceiverAt(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 2, MsgBytes: 2048, StopObservations: 1, Senders: f}, wire.MRWholeRing, "[::]:0")
	_, port, err := net.SplitHostPort(hs.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(host string, seed uint64) (sender.Result, error) {
		cfg := sender.Config{Mode: wire.ModeSend, QPs: 2, MsgBytes: 2048, Bytes: 40000, Source: sender.PatternSource{Seed: seed}}
		fab := memfabric.NewSender(hs.net, make([]byte, sender.SendBufferBytes(cfg)))
		return sender.Send(ctx, net.JoinHostPort(host, port), cfg, fab)
	}

	// ::1 is outside 127.0.0.0/8: refused, and told so.
	_, err = send("::1", 1)
	var re *sender.RejectedError
	if !errors.As(err, &re) {
		t.Fatalf("sender from ::1: err %v, want a refusal", err)
	}
	for _, w := range []string{"sender ::1 is not allowed", "accepts senders from 127.0.0.0/8 only", "--allowed-senders"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	st := hs.rx.Tracker().Snapshot()
	if st.RefusedSenders != 1 || st.State != statusdoc.StateListening || st.Observations != 0 {
		t.Errorf("after the refusal: refusedSenders %d state %s observations %d, want 1 Listening 0", st.RefusedSenders, st.State, st.Observations)
	}
	rec := httptest.NewRecorder()
	hs.rx.Tracker().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "ringcap_recv_refused_senders_total 1\n") {
		t.Errorf("/metrics has no ringcap_recv_refused_senders_total 1:\n%s", grepLines(rec.Body.String(), "refused"))
	}

	// An IPv4 loopback sender (::ffff:127.0.0.1 on this dual-stack listener) streams.
	reads := readObservations(t, ctx, h, 1, 2, 0)
	res, err := send("127.0.0.1", 2)
	if err != nil || !res.Complete || res.Bytes != 40000 {
		t.Fatalf("allowed sender: %+v %v", res, err)
	}
	if obs := <-reads; len(obs) != 1 || obs[0].bytes != 40000 || obs[0].err != nil {
		t.Fatalf("reader: %+v", obs)
	}
	if err := hs.wait(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + " (" + strconv.Itoa(len(out)) + " lines)"
}
