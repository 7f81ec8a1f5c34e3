//go:build vm

package verbs

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// rdmaResources returns the kernel's per-device object counts ("rdma resource show"), so a
// leak check sees what libibverbs really left behind, not just this package's counters.
func rdmaResources(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v\n%s", err, out)
	}
	for _, want := range []string{vmtest.Device0 + ":", vmtest.Device1 + ":", " pd ", " cq ", " qp ", " mr "} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("rdma resource show lacks %q:\n%s", want, out)
		}
	}
	return string(out)
}

// leakCheck fails t when, at its end, verbs objects or kernel RDMA resources are left over.
func leakCheck(t *testing.T) {
	t.Helper()
	live0, res0 := Live(), rdmaResources(t)
	t.Cleanup(func() {
		if live := Live(); live != live0 {
			t.Errorf("verbs objects leaked: %+v, before the test %+v", live, live0)
		}
		if res := rdmaResources(t); res != res0 {
			t.Errorf("kernel RDMA resources leaked:\nbefore: %safter:  %s", res0, res)
		}
	})
}

var keySeq atomic.Int32

// newKey returns a ring key no other test uses. Ring keys use key + n*0x10000 for their
// blocks and key+1 for the header ring: test rings are 0x800000 apart, and processes differ
// in the low bits.
func newKey() dada.Key {
	return dada.Key(0x40000000 + keySeq.Add(1)*0x800000 + (int32(os.Getpid())&0xff)<<8)
}

// newRing creates a PSRDADA ring for the test and destroys it at the end.
func newRing(t testing.TB, nbufs, bufsz uint64) dada.Key {
	t.Helper()
	key := newKey()
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize = key, nbufs, bufsz
	h, err := dada.Create(cfg)
	if err != nil {
		t.Fatalf("create ring %s (%d x %d): %v", key, nbufs, bufsz, err)
	}
	t.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			t.Errorf("destroy ring %s: %v", key, err)
		}
	})
	return key
}

func connectRing(t testing.TB, key dada.Key, contiguous bool) *dada.HDU {
	t.Helper()
	h, err := dada.Connect(key, dada.ConnectOptions{Contiguous: contiguous})
	if err != nil {
		t.Fatalf("connect ring %s: %v", key, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// roceV2IPv4 returns the index and GID of the port's RoCE v2 IPv4-mapped GID.
func roceV2IPv4(t testing.TB, c *Context) (int, net.IP) {
	t.Helper()
	tab, err := c.GIDTable(vmtest.Port)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tab {
		if e.Type == GIDTypeRoCEv2 && e.GID.To4() != nil {
			return e.Index, e.GID
		}
	}
	t.Fatalf("%s has no RoCE v2 IPv4 GID: %+v", c.Name(), tab)
	return 0, nil
}

// side is one end of an RC connection.
type side struct {
	ctx *Context
	pd  *PD
	cq  *CQ
	qp  *QP
}

// pair is an RC connection from rxe0 (src) to rxe1 (dst) over the veth pair.
type pair struct{ src, dst side }

func newSide(t testing.TB, dev string) side {
	t.Helper()
	c, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close %s: %v", dev, err)
		}
	})
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQConfig{Entries: 256, Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 128, MaxRecvWR: 128})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ToInit(vmtest.Port, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	return side{ctx: c, pd: pd, cq: cq, qp: qp}
}

func newPair(t testing.TB) *pair {
	t.Helper()
	p := &pair{src: newSide(t, vmtest.Device0), dst: newSide(t, vmtest.Device1)}
	connect := func(a, b side, psnA, psnB uint32) {
		idx, _ := roceV2IPv4(t, a.ctx)
		_, gidB := roceV2IPv4(t, b.ctx)
		rtr := DefaultRTR()
		rtr.RemoteQPN, rtr.RemotePSN, rtr.RemoteGID, rtr.SGIDIndex = b.qp.QPN(), psnB, gidB, idx
		if err := a.qp.ToRTR(rtr); err != nil {
			t.Fatal(err)
		}
		rts := DefaultRTS()
		rts.PSN = psnA
		if err := a.qp.ToRTS(rts); err != nil {
			t.Fatal(err)
		}
	}
	connect(p.src, p.dst, 0x1234, 0x4321)
	connect(p.dst, p.src, 0x4321, 0x1234)
	for _, s := range []side{p.src, p.dst} {
		if st, err := s.qp.State(); err != nil || st != QPRTS {
			t.Fatalf("QP %d state %v, %v; want RTS", s.qp.QPN(), st, err)
		}
	}
	return p
}

// registered maps n bytes (Mmap) and registers them on pd with access; both are released
// when the test ends.
func registered(t *testing.T, pd *PD, n int, access Access) ([]byte, *MR) {
	t.Helper()
	buf, err := Mmap(n)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, func() error { return Munmap(buf) })
	mr, err := pd.RegisterMR(buf, access)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, mr.Close)
	return buf, mr
}

// waitCompletions polls cq until n completions arrived, failing on any error status.
func waitCompletions(t testing.TB, cq *CQ, n int) []WorkCompletion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var all []WorkCompletion
	buf := make([]WorkCompletion, 64)
	for len(all) < n {
		k, err := cq.PollWait(ctx, buf)
		if err != nil {
			t.Fatalf("after %d of %d completions: %v", len(all), n, err)
		}
		for _, wc := range buf[:k] {
			if err := wc.Err(); err != nil {
				t.Fatalf("completion %d: %v", len(all), err)
			}
			all = append(all, wc)
		}
	}
	return all
}

var gidLine = regexp.MustCompile(`^[0-9a-f]{4}(:[0-9a-f]{4}){7}$`)

func parseSysfsGID(s string) (net.IP, error) {
	if !gidLine.MatchString(s) {
		return nil, fmt.Errorf("bad GID %q", s)
	}
	ip := make(net.IP, 16)
	for i := 0; i < 8; i++ {
		v, err := strconv.ParseUint(s[i*5:i*5+4], 16, 16)
		if err != nil {
			return nil, err
		}
		ip[2*i], ip[2*i+1] = byte(v>>8), byte(v)
	}
	return ip, nil
}
