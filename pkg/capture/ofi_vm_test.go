//go:build vm

package capture

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// ofiVerbs is libfabric over Soft-RoCE: verbs;ofi_rxm, whose remote CQ data
// has 4 bytes, so write mode carries its lengths in length messages.
const ofiVerbs = "verbs;ofi_rxm"

// The host's TestOFIMatrix over verbs;ofi_rxm on rxe, through the CLI:
// write and send modes, WholeRing and PerBlock, 1, 4 and 16 endpoints, two
// observations (one ending on a block boundary, one off the block and
// message boundaries) read and verified byte for byte by ring read.
func TestVMOFIMatrix(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	const nbufs, bufsz, msg = 4, 256 << 10, 32 << 10
	for _, mode := range []string{"write", "send"} {
		for _, mr := range []string{"wholering", "perblock"} {
			for _, qps := range []int{1, 4, 16} {
				t.Run(fmt.Sprintf("%s/%s/qps=%d", mode, mr, qps), func(t *testing.T) {
					key := vmKey()
					ringCreate(t, bin, key, nbufs, bufsz)
					connect := net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort()))
					summary := filepath.Join(t.TempDir(), "summary.json")
					q, m := strconv.Itoa(qps), strconv.Itoa(msg)
					recv := start(t, bin, "recv", "-k", key, "--transport", "ofi", "--ofi-provider", ofiVerbs, "--ofi-domain", vmtest.Device1,
						"--mode", mode, "--mr", mr, "--qps", q, "--msg-bytes", m, "--listen", connect, "--metrics-addr", "",
						"--stop-observations", "2", "--summary-file", summary)
					waitListening(t, connect, recv)
					sendArgs := []string{"--transport", "ofi", "--ofi-domain", vmtest.Device0, "--mode", mode, "--qps", q, "--msg-bytes", m}
					onBoundary := uint64(3 * nbufs * bufsz)
					offBoundary := uint64(2*bufsz + 3*msg + 1234)
					verifyObservation(t, bin, key, connect, onBoundary, 21, sendArgs...)
					verifyObservation(t, bin, key, connect, offBoundary, 22, sendArgs...)
					if err := recv.wait(t, time.Minute); err != nil {
						t.Fatalf("recv: %v\n%s", err, recv.output())
					}
					st := readSummary(t, summary)
					wantMR := map[string]string{"wholering": "WholeRing", "perblock": "PerBlock"}[mr]
					if st.State != statusdoc.StateFinished || st.Observations != 2 || st.IncompleteObs != 0 ||
						st.BytesReceived != onBoundary+offBoundary || st.MemoryRegistration.Mode != wantMR ||
						st.QueuePairs != qps || st.TransferMode != mode || st.Transport != "ofi" || st.Provider != ofiVerbs {
						t.Fatalf("summary %+v\nrecv output:\n%s", st, recv.output())
					}
					if !strings.Contains(recv.output(), fmt.Sprintf("with libfabric provider %q domain %q", ofiVerbs, vmtest.Device1)) {
						t.Fatalf("no registration log line naming the provider and domain:\n%s", recv.output())
					}
				})
			}
		}
	}
}

// `ringcap devices` asks every libfabric provider (no provider named) on a host with RDMA
// devices, and lists verbs;ofi_rxm on both rxe devices with write and send modes.
func TestVMOFIDevices(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	// Evidence for docs/ofi.md: libfabric's own fi_info over every provider.
	for _, c := range []struct{ env, args []string }{{nil, nil}, {[]string{"FI_PROVIDER=^psm"}, nil}, {nil, []string{"-p", "psm"}}, {nil, []string{"-p", "psm2"}}} {
		cmd := exec.Command("fi_info", c.args...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		t.Logf("fi_info %v %v: %v; last lines:\n%s", c.env, c.args, err, tail(string(out), 12))
	}
	out, err := run(t, 2*time.Minute, bin, "devices", "-o", "json")
	if err != nil {
		t.Fatalf("ringcap devices: %v\n%s", err, out)
	}
	// The fields used of devices.Report (whose package would link libfabric into this binary).
	var r struct {
		OFI struct {
			Providers []struct {
				Provider, Domain string
				Modes            []string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ringcap devices -o json: %v\n%s", err, out)
	}
	found := map[string]bool{}
	for _, p := range r.OFI.Providers {
		if p.Provider == ofiVerbs && slices.Contains(p.Modes, "write") && slices.Contains(p.Modes, "send") {
			found[p.Domain] = true
		}
	}
	if !found[vmtest.Device0] || !found[vmtest.Device1] {
		t.Fatalf("%s with write and send on %v, want %s and %s:\n%s", ofiVerbs, found, vmtest.Device0, vmtest.Device1, out)
	}
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
