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
)

func TestSenderFilter(t *testing.T) {
	f, err := NewSenderFilter([]netip.Prefix{netip.MustParsePrefix("198.18.0.7/24"), netip.MustParsePrefix("2001:db8::/32")})
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 4000} }
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{tcp("198.18.0.1"), true},
		{tcp("198.18.0.255"), true},
		{tcp("::ffff:198.18.0.9"), true}, // an IPv4 sender on a dual-stack listener
		{tcp("198.18.1.1"), false},
		{tcp("10.88.0.5"), false},
		{tcp("2001:db8::5"), true},
		{tcp("2001:db9::5"), false},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, false},
	} {
		if got := f.Allows(tc.addr); got != tc.want {
			t.Errorf("Allows(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if got := f.String(); got != "198.18.0.0/24, 2001:db8::/32" {
		t.Errorf("String() = %q, want the masked networks", got)
	}
	var none *SenderFilter
	if !none.Allows(tcp("10.0.0.1")) || none.String() != "any" {
		t.Error("a nil filter must allow every sender")
	}
	if _, err := NewSenderFilter(nil); err == nil {
		t.Error("an empty allowlist was accepted")
	}
}

// A sender outside the allowlist is refused at the handshake with a message that says
// why, the refusal is counted, and the receiver goes on to serve an allowed sender.
func TestAllowlistRefusesAndKeepsServing(t *testing.T) {
	f, err := NewSenderFilter([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if err != nil {
		t.Fatal(err)
	}
	h := testRing(t, 4, 8192)
	hs := startReceiverAt(t, h, ReceiverConfig{Mode: ModeSend, QPs: 2, MsgBytes: 2048, StopObservations: 1, Senders: f}, MRWholeRing, "[::]:0")
	_, port, err := net.SplitHostPort(hs.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(host string, seed uint64) (Result, error) {
		cfg := SenderConfig{Mode: ModeSend, QPs: 2, MsgBytes: 2048, Bytes: 40000, Source: PatternSource{Seed: seed}}
		fab := &memSendFabric{n: hs.net, buf: make([]byte, SendBufferBytes(cfg))}
		return Send(ctx, net.JoinHostPort(host, port), cfg, fab)
	}

	// ::1 is outside 127.0.0.0/8: refused, and told so.
	_, err = send("::1", 1)
	var re *RejectedError
	if !errors.As(err, &re) {
		t.Fatalf("sender from ::1: err %v, want a refusal", err)
	}
	for _, w := range []string{"sender ::1 is not allowed", "accepts senders from 127.0.0.0/8 only", "--allowed-senders"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	st := hs.rx.Tracker().Snapshot()
	if st.RefusedSenders != 1 || st.State != StateListening || st.Observations != 0 {
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
