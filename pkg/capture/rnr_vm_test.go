//go:build vm

package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// rnrCounterNames are the hw_counters an rxe device keeps of
// receiver-not-ready NAKs: received (the requester's side), sent (the
// responder's) and retries exhausted. Not every kernel has every one.
var rnrCounterNames = []string{"rcvd_rnr_err", "send_rnr_err", "retry_rnr_exceeded_err", "rnr_nak_retry_err"}

// rxeCounters sums the named hw_counters of both rxe devices (the port's, or
// on older kernels the device's); a name neither device has is left out.
func rxeCounters(t *testing.T, names ...string) map[string]uint64 {
	t.Helper()
	sum := map[string]uint64{}
	for _, dev := range []string{vmtest.Device0, vmtest.Device1} {
		base := filepath.Join("/sys/class/infiniband", dev)
		dirs := []string{filepath.Join(base, "ports", strconv.Itoa(vmtest.Port), "hw_counters"), filepath.Join(base, "hw_counters")}
		for _, name := range names {
			for _, dir := range dirs {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatalf("read %s counter %s: %v", dev, name, err)
				}
				v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					t.Fatalf("%s counter %s: %v", dev, name, err)
				}
				sum[name] += v
				break
			}
		}
	}
	return sum
}

// In send mode on real rxe, a reader that holds a ring block for 2 s
// mid-stream holds the sender back through receive grants: no SEND arrives
// without its receive posted, so rxe sends and receives no RNR NAK (with
// rnr_retry 7 a NAK and a retry every 0.64 ms per queue pair for as long as
// the hold lasts), and every byte lands.
func TestVMSendModeHoldWithoutRNR(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	const nbufs, bufsz, msg = 8, 256 << 10, 32 << 10
	const total = 3 * nbufs * bufsz
	o := startOneObservation(t, bin, "send", nbufs, bufsz, "--msg-bytes", strconv.Itoa(msg))
	h := connectRing(t, o.key)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reads := readPaced(t, ctx, h, 1, 31, func(b int) time.Duration {
		if b == 4 {
			return 2 * time.Second
		}
		return 0
	})
	before := rxeCounters(t, append([]string{"sent_pkts"}, rnrCounterNames...)...)
	if len(before) < 2 {
		t.Fatalf("rxe keeps none of the RNR counters %v (found %v)", rnrCounterNames, before)
	}
	out, err := run(t, 3*time.Minute, bin, "send", "--connect", o.connect, "--mode", "send", "--qps", "4", "--msg-bytes", strconv.Itoa(msg),
		"--bytes", strconv.Itoa(total), "--seed", "31")
	if err != nil || !strings.Contains(out, "complete=true") {
		t.Fatalf("send: %v\n%s", err, out)
	}
	obs := <-reads
	if len(obs) != 1 || obs[0].err != nil || obs[0].bytes != total || obs[0].mismatches != 0 {
		t.Fatalf("reader %+v, want %d verified bytes", obs, total)
	}
	if err := o.recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, o.recv.output())
	}
	after := rxeCounters(t, append([]string{"sent_pkts"}, rnrCounterNames...)...)
	st := readSummary(t, o.summary)
	t.Logf("held back %.3f s of %.3f s; rxe counters before %v, after %v", st.HeldBackSeconds, st.Seconds, before, after)
	if st.HeldBackSeconds <= 0 || st.BytesReceived != total {
		t.Fatalf("the reader's hold must hold the sender back: %+v", st)
	}
	if after["sent_pkts"]-before["sent_pkts"] < total/4096 {
		t.Fatalf("rxe counted %d packets sent for %d bytes: its counters do not count this stream", after["sent_pkts"]-before["sent_pkts"], total)
	}
	for _, name := range rnrCounterNames {
		if d := after[name] - before[name]; d != 0 {
			t.Errorf("rxe %s grew by %d during the stream", name, d)
		}
	}
}
