//go:build vm

package capture

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
					if qps > 1 { // a software RDMA domain: an endpoint thread per vCPU
						c.sendLog = ofiThreads
					}
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

// ofiThreads is the sender's log line when its endpoints run on threads of
// their own: on the VM's software RDMA domain, one per vCPU.
const ofiThreads = "Started the endpoints' threads: each posts to and reads the completion queue of its endpoints\" threads=2"

// A stream over verbs;ofi_rxm whose sender drives its endpoints from threads
// of their own, interrupted (SIGINT): it lands the gap-free prefix the sender
// reports, verified byte for byte and marked incomplete.
func TestVMOFIStreamInterrupted(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	t.Setenv("IPATH_NO_BACKTRACE", "1")
	t.Setenv("GOTRACEBACK", "system")
	o := startOneObservation(t, bin, "write", 8, 256<<10, "--msg-bytes", "16384",
		"--transport", "ofi", "--ofi-provider", ofiVerbs, "--ofi-domain", vmtest.Device1)
	reader := start(t, bin, "ring", "read", "-k", o.key, "--verify", "43", "-s")
	sender := start(t, bin, "send", "--connect", o.connect, "--mode", "write", "--qps", "4", "--msg-bytes", "16384", "--seed", "43",
		"--duration", "10m", "--progress", "100ms", "--transport", "ofi", "--ofi-domain", vmtest.Device0)
	waitSent(t, sender)
	if err := sender.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = sender.wait(t, 2*time.Minute) // an interrupted send exits non-zero
	m := sendLine.FindStringSubmatch(sender.output())
	if m == nil || m[2] != "false" || m[1] == "0" || !strings.Contains(sender.output(), ofiThreads) {
		t.Fatalf("send summary (want complete=false, bytes, endpoint threads):\n%s", sender.output())
	}
	if err := o.recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, o.recv.output())
	}
	if err := reader.wait(t, time.Minute); err != nil {
		t.Fatalf("ring read: %v\n%s", err, reader.output())
	}
	r := parseRead(t, reader.output())
	if strconv.FormatUint(r.bytes, 10) != m[1] || r.mismatches != 0 || r.observations != 1 {
		t.Fatalf("reader %+v, sender sent %s bytes\nsend:\n%s\nrecv:\n%s", r, m[1], sender.output(), o.recv.output())
	}
	if st := readSummary(t, o.summary); st.LastObservation == nil || st.LastObservation.Complete {
		t.Fatalf("summary %+v", st)
	}
}

// A sender whose receiver is killed mid-stream ends at once with an error
// saying so, over raw verbs and over verbs;ofi_rxm (its endpoints driven from
// threads of their own) alike.
func TestVMReceiverKilled(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	t.Setenv("IPATH_NO_BACKTRACE", "1")
	for _, tr := range []string{"verbs", "ofi"} {
		t.Run(tr, func(t *testing.T) {
			var rargs, sargs []string
			if tr == "ofi" {
				rargs = []string{"--transport", "ofi", "--ofi-provider", ofiVerbs, "--ofi-domain", vmtest.Device1}
				sargs = []string{"--transport", "ofi", "--ofi-domain", vmtest.Device0}
			}
			o := startOneObservation(t, bin, "write", 8, 256<<10, append([]string{"--msg-bytes", "16384"}, rargs...)...)
			reader := start(t, bin, "ring", "read", "-k", o.key, "--verify", "45", "-s")
			sender := start(t, bin, append([]string{"send", "--connect", o.connect, "--mode", "write", "--qps", "4", "--msg-bytes", "16384", "--seed", "45",
				"--duration", "10m", "--progress", "1s"}, sargs...)...)
			waitSent(t, sender)
			killed := time.Now()
			if err := o.recv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = o.recv.wait(t, 2*time.Minute)
			t.Logf("the receiver exited %v after SIGKILL", time.Since(killed))
			if err := sender.wait(t, 2*time.Minute); err == nil {
				t.Fatalf("send succeeded with its receiver killed:\n%s", sender.output())
			}
			took := time.Since(killed)
			t.Logf("the sender exited %v after its receiver's SIGKILL:\n%s", took, sender.output())
			_ = reader.cmd.Process.Kill() // it waits for an observation that never ends
			if !strings.Contains(sender.output(), "receiver closed the connection") || (tr == "ofi" && !strings.Contains(sender.output(), ofiThreads)) {
				t.Fatalf("the sender's output does not say its receiver went (or, over ofi, that it drove its endpoints from threads):\n%s", sender.output())
			}
			// A guard against waiting for a Done that cannot come (60 s) or
			// for a provider that takes nothing (30 s), not a speed check.
			if took > 25*time.Second {
				t.Fatalf("the sender took %v to end after its receiver was killed", took)
			}
		})
	}
}
