//go:build vm

package capture

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/devices"
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
	// A crash in C code is reported by Go, not by the handler libinfinipath (linked by
	// Debian's libfabric) installs when it loads (docs/ofi.md).
	t.Setenv("IPATH_NO_BACKTRACE", "1")
	t.Setenv("GOTRACEBACK", "system") // every goroutine, when one crashes
	const nbufs, bufsz, msg = 4, 256 << 10, 32 << 10
	for _, mode := range []string{"write", "send"} {
		for _, mr := range []string{"wholering", "perblock"} {
			for _, qps := range []int{1, 4, 16} {
				t.Run(fmt.Sprintf("%s/%s/qps=%d", mode, mr, qps), func(t *testing.T) {
					m := strconv.Itoa(msg)
					c := vmCell{mode: mode, mr: mr, qps: qps, nbufs: nbufs, bufsz: bufsz, off: 2*bufsz + 3*msg + 1234, seed: 21,
						recvArgs: []string{"--transport", "ofi", "--ofi-provider", ofiVerbs, "--ofi-domain", vmtest.Device1, "--msg-bytes", m},
						sendArgs: []string{"--transport", "ofi", "--ofi-domain", vmtest.Device0, "--msg-bytes", m}}
					st, out := runVMCell(t, bin, &c)
					if st.Transport != "ofi" || st.Provider != ofiVerbs {
						t.Fatalf("summary %+v\nrecv output:\n%s", st, out)
					}
					// slog quotes the message: its quotes come escaped.
					if !strings.Contains(out, fmt.Sprintf(`with libfabric provider \"%s\" domain \"%s\"`, ofiVerbs, vmtest.Device1)) {
						t.Fatalf("no registration log line naming the provider and domain:\n%s", out)
					}
				})
			}
		}
	}
}

// TestVMOFIDevices: `ringcap devices` lists verbs;ofi_rxm on both rxe devices, each
// bound to its port's address (libfabric's verbs provider offers it only there in
// the VM), with both modes and 4 bytes of remote CQ data; the text output too.
func TestVMOFIDevices(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	t.Setenv("IPATH_NO_BACKTRACE", "1")
	out, err := exec.Command(bin, "devices", "-o", "json").Output()
	if err != nil {
		t.Fatalf("ringcap devices -o json: %v\n%s", err, out)
	}
	var r devices.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("decode ringcap devices -o json: %v\n%s", err, out)
	}
	if !r.OFI.Available || len(r.OFI.Skipped) != 0 {
		t.Fatalf("libfabric report %+v", r.OFI)
	}
	text, err := exec.Command(bin, "devices").Output()
	if err != nil {
		t.Fatalf("ringcap devices: %v\n%s", err, text)
	}
	for _, dev := range []struct{ name, ip string }{{vmtest.Device0, vmtest.IP0}, {vmtest.Device1, vmtest.IP1}} {
		var got *devices.OFIProvider
		for i, p := range r.OFI.Providers {
			if p.Provider == ofiVerbs && p.Domain == dev.name {
				got = &r.OFI.Providers[i]
			}
		}
		if got == nil {
			t.Fatalf("no %s domain %s among %+v", ofiVerbs, dev.name, r.OFI.Providers)
		}
		if got.Node != dev.ip || got.LocalOnly || !got.RMA || !got.Msg || !got.RemoteCQData || got.CQDataSize != 4 ||
			strings.Join(got.Modes, ",") != "write,send" || got.Missing != "" {
			t.Errorf("%s on %s: %+v; want bound to %s, RMA, messages, 4 bytes of remote CQ data, write and send", ofiVerbs, dev.name, *got, dev.ip)
		}
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ofiVerbs) + ` +` + dev.name + ` +` + regexp.QuoteMeta(dev.ip) + ` +yes +yes +4 bytes .* write, send$`)
		if !line.Match(text) {
			t.Errorf("ringcap devices names no %s line for %s bound to %s:\n%s", ofiVerbs, dev.name, dev.ip, text)
		}
	}
}
