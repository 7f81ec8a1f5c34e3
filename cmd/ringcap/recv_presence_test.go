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
