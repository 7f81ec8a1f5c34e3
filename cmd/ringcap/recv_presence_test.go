package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/presence"
)

// `ringcap recv --presence-key` with `ringcap send --drop-every`: the
// presence ring, read by `ring read --presence`, holds one record per data
// block whose missing granules are exactly the dropped packets (a granule is
// a packet), all others present, and whose zero-filled bytes add up to the
// data ring's; both rings are gone after the run.
func TestRecvPresenceSPEADDropEvery(t *testing.T) {
	const total, pkt, every, block = 32 << 10, 256, 7, 4096
	sent := total/pkt - total/pkt/every
	pkey := testKey(t).String()
	r := startPacketRecv(t, packetSetup{create: true}, append(sendRuleItems, "--stop-bytes", strconv.Itoa(sent*pkt),
		"--presence-key", pkey, "--presence-granule", strconv.Itoa(pkt))...)
	data := startReader(r.key)
	hdrFile := filepath.Join(t.TempDir(), "presence.hdr")
	records := make(chan [2]string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, errs, err := ringcap(ctx, "ring", "read", "-k", pkey, "--presence", "-s", "--wait", "10s", "--header-out", hdrFile)
		records <- [2]string{out, fmt.Sprint(errs, err)}
	}()
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	packetSend(t, r, append(sendRuleItems, "--bytes", strconv.Itoa(total), "--packet-bytes", strconv.Itoa(pkt), "--drop-every", strconv.Itoa(every), "--rate", "4M")...)
	final := r.wait(t)
	if got := <-data; got.err != nil || len(got.data) != total {
		t.Fatalf("data ring: %d bytes, %v", len(got.data), got.err)
	}
	got := <-records
	if !strings.Contains(got[1], "read: bytes=") || strings.Contains(got[1], "Error") {
		t.Fatalf("ring read --presence: %s", got[1])
	}
	lines := strings.Split(strings.TrimSpace(got[0]), "\n")
	if len(lines) != total/block {
		t.Fatalf("%d records, want %d:\n%s", len(lines), total/block, got[0])
	}
	var zero uint64
	for b, line := range lines {
		want := presenceLine(b, block, pkt, every, b == len(lines)-1)
		if line != want {
			t.Errorf("record %d:\n got %s\nwant %s", b, line, want)
		}
		zero += recordField(t, line, "zero_filled")
	}
	if zero != final.Packets.ZeroFilledBytes || zero != uint64(total-sent*pkt) {
		t.Errorf("records zero-fill %d bytes, the data ring %d", zero, final.Packets.ZeroFilledBytes)
	}
	hb, err := os.ReadFile(hdrFile)
	if err != nil {
		t.Fatal(err)
	}
	hd, _ := dada.ParseHeader(hb)
	checkHeader(t, hd, map[string]string{presence.KeyFormat: presence.FormatName, presence.KeyGranule: strconv.Itoa(pkt),
		presence.KeyDataKey: r.key, presence.KeyDataBlock: strconv.Itoa(block), "RINGCAP_PROTOCOL": "spead", "OBS_OFFSET": "0"})
	for _, k := range []string{r.key, pkey} {
		if _, err := dada.Connect(mustKey(k), dada.ConnectOptions{}); !errors.Is(err, dada.ErrNoRing) {
			t.Errorf("ring %s after the run: %v", k, err)
		}
	}
}

// presenceLine is the record of data block b: the packets i with
// (i+1)%every == 0 dropped, a granule per packet.
func presenceLine(b, block, pkt, every int, last bool) string {
	per := block / pkt
	var missing []string
	for k := range per {
		if (b*per+k+1)%every == 0 {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	lost := len(missing) * pkt
	s := fmt.Sprintf("seq=%d expected=%d received=%d zero_filled=%d granule=%d granules=%d missing_granules=%d missing=%s",
		b, block, block-lost, lost, pkt, per, len(missing), strings.Join(missing, ","))
	if len(missing) == 0 {
		s += "-"
	}
	if last {
		s += " last"
	}
	return s
}

// recordField is a field of a record's text.
func recordField(t *testing.T, line, key string) uint64 {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", key, line)
	return 0
}

// A VDIF stream with the granule its data array (--vdif-payload-bytes): the
// dropped frame's granule is missing, read back with pkg/ingest/presence.
func TestRecvPresenceVDIF(t *testing.T) {
	pkey := testKey(t)
	r := startPacketRecv(t, packetSetup{create: true}, "--protocol", "vdif", "--vdif-frames-per-second", "8", "--vdif-threads", "0,1",
		"--vdif-payload-bytes", "512", "--stop-bytes", strconv.Itoa(23*512), "--presence-key", pkey.String())
	data := startReader(r.key)
	pres := startReader(pkey.String())
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	r.send(t, vdifPackets())
	final := r.wait(t)
	if got := <-data; got.err != nil || len(got.data) != 3*4096 {
		t.Fatalf("data ring: %d bytes, %v", len(got.data), got.err)
	}
	got := <-pres
	if got.err != nil {
		t.Fatal(got.err)
	}
	size := int(presence.Bytes(4096, 512))
	if len(got.data) != 3*size {
		t.Fatalf("presence ring: %d bytes, want 3 blocks of %d", len(got.data), size)
	}
	checkHeader(t, got.hdr, map[string]string{presence.KeyGranule: "512", "RINGCAP_PROTOCOL": "vdif", "RINGCAP_VDIF_STATION": "Ef"})
	var zero uint64
	for b := range 3 {
		rec, err := presence.Decode(got.data[b*size : (b+1)*size])
		if err != nil {
			t.Fatal(err)
		}
		want := "seq=0 expected=4096 received=3584 zero_filled=512 granule=512 granules=8 missing_granules=1 missing=7"
		if b > 0 {
			want = fmt.Sprintf("seq=%d expected=4096 received=4096 zero_filled=0 granule=512 granules=8 missing_granules=0 missing=-", b)
		}
		if b == 2 {
			want += " last"
		}
		if rec.String() != want {
			t.Errorf("record %d: %s, want %s", b, rec, want)
		}
		zero += rec.Expected - rec.Received
	}
	if zero != final.Packets.ZeroFilledBytes {
		t.Errorf("records zero-fill %d bytes, the data ring %d", zero, final.Packets.ZeroFilledBytes)
	}
}

// A presence ring that cannot be: flags that do not go together, a key
// clashing with the data ring's, an existing ring whose blocks are too small.
func TestRecvPresenceRefused(t *testing.T) {
	vdifArgs := []string{"--protocol", "vdif", "--udp-ports", strconv.Itoa(freeUDPPort(t)), "--udp-address", "127.0.0.1", "--vdif-frames-per-second", "8", "--metrics-addr", ""}
	key := testKey(t).String()
	existing, small := createRing(t, "-b", "4096", "-n", "8"), createRing(t, "-b", "32", "-n", "2")
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(vdifArgs, "--presence-granule", "512"), "--presence-granule needs --presence-key"},
		{[]string{"--presence-key", "eada"}, "--presence-key: not for --protocol rdma"},
		{append(vdifArgs, "--create", "-b", "4096", "--presence-key", key), "its key or its header ring's is ring"},
		{append(vdifArgs, "-k", existing, "--presence-key", small), "too small for a record"},
	} {
		args := append([]string{"recv", "-k", key}, c.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, _, err := ringcap(ctx, args...)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ringcap %s: got %v, want an error containing %q", strings.Join(args, " "), err, c.want)
		}
	}
	if _, err := dada.Connect(mustKey(key), dada.ConnectOptions{}); !errors.Is(err, dada.ErrNoRing) {
		t.Errorf("ring %s left behind: %v", key, err)
	}
}

// An observation without a block (its one packet malformed) ends in the
// presence ring as in the data ring: a header, then the end of the data.
func TestRecvPresenceEmptyObservation(t *testing.T) {
	pkey := testKey(t).String()
	r := startPacketRecv(t, packetSetup{create: true}, "--protocol", "vdif", "--vdif-frames-per-second", "8", "--stop-duration", "2s", "--presence-key", pkey)
	data, pres := startReader(r.key), startReader(pkey)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	r.send(t, [][]byte{[]byte("short")})
	final := r.wait(t)
	if final.Packets == nil || final.Packets.Malformed != 1 || final.Packets.Blocks != 0 {
		t.Fatalf("packets %+v", final.Packets)
	}
	d, p := <-data, <-pres
	if d.err != nil || p.err != nil || len(d.data) != 0 || len(p.data) != 0 {
		t.Fatalf("data ring %d bytes, %v; presence ring %d bytes, %v", len(d.data), d.err, len(p.data), p.err)
	}
	checkHeader(t, p.hdr, map[string]string{presence.KeyFormat: presence.FormatName, "RINGCAP_PROTOCOL": "vdif"})
}
