//go:build vm

package verbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

func TestDeviceAndPortQuery(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	names, err := DeviceNames()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, vmtest.Device0) || !slices.Contains(names, vmtest.Device1) {
		t.Fatalf("devices %v, want rxe0 and rxe1", names)
	}
	c, err := Open(vmtest.Device0)
	if err != nil {
		t.Fatal(err)
	}
	vmtest.Cleanup(t, c.Close)
	a := c.Attr()
	if a.MaxQP <= 0 || a.MaxQPWR <= 0 || a.MaxCQE <= 0 || a.MaxMR <= 0 || a.MaxMRSize == 0 || a.MaxSGE <= 0 || a.PhysPortCount != 1 || a.NodeGUID == 0 {
		t.Errorf("implausible device attributes: %+v", a)
	}
	p, err := c.QueryPort(vmtest.Port)
	if err != nil {
		t.Fatal(err)
	}
	// veth MTU 9000 gives rxe an active MTU of 4096.
	if p.State != PortActive || p.LinkLayer != "Ethernet" || p.ActiveMTU != MTU4096 || p.GIDTableLen <= 0 {
		t.Errorf("port 1: %+v, want ACTIVE Ethernet MTU 4096", p)
	}
	if _, err := c.QueryPort(2); err == nil {
		t.Error("QueryPort(2) on a one-port device succeeded")
	}
	if _, err := Open("rxe9"); err == nil || !strings.Contains(err.Error(), "rxe0") {
		t.Errorf("Open(rxe9) = %v, want an error listing the devices", err)
	}
}

// TestGIDTableMatchesSysfs compares the verbs GID table with the kernel's sysfs view.
func TestGIDTableMatchesSysfs(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	for dev, ip := range map[string]string{vmtest.Device0: vmtest.IP0, vmtest.Device1: vmtest.IP1} {
		c, err := Open(dev)
		if err != nil {
			t.Fatal(err)
		}
		vmtest.Cleanup(t, c.Close)
		p, err := c.QueryPort(vmtest.Port)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := c.GIDTable(vmtest.Port)
		if err != nil {
			t.Fatal(err)
		}
		byIndex := map[int]GIDEntry{}
		for _, e := range tab {
			byIndex[e.Index] = e
		}
		base := "/sys/class/infiniband/" + dev + "/ports/1/"
		valid := 0
		for i := 0; i < p.GIDTableLen; i++ {
			raw, err := os.ReadFile(base + "gids/" + itoa(i))
			if err != nil {
				t.Fatalf("%s gid %d: %v", dev, i, err)
			}
			gid, err := parseSysfsGID(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatalf("%s gid %d: %v", dev, i, err)
			}
			q, err := c.QueryGID(vmtest.Port, i)
			if err != nil {
				t.Fatalf("QueryGID(%d): %v", i, err)
			}
			if !q.Equal(gid) {
				t.Errorf("%s gid %d: ibv_query_gid %v, sysfs %v", dev, i, q, gid)
			}
			e, inTable := byIndex[i]
			if gid.IsUnspecified() {
				if inTable {
					t.Errorf("%s gid %d: verbs lists %v, sysfs has an empty entry", dev, i, e.GID)
				}
				continue
			}
			valid++
			if !inTable {
				t.Errorf("%s gid %d: sysfs has %v, verbs table lacks it", dev, i, gid)
				continue
			}
			typ, err := os.ReadFile(base + "gid_attrs/types/" + itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			ndev, err := os.ReadFile(base + "gid_attrs/ndevs/" + itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			if !e.GID.Equal(gid) || e.Type.SysfsName() != strings.TrimSpace(string(typ)) || e.Netdev != strings.TrimSpace(string(ndev)) {
				t.Errorf("%s gid %d: verbs %v %q %q, sysfs %v %q %q", dev, i, e.GID, e.Type.SysfsName(), e.Netdev,
					gid, strings.TrimSpace(string(typ)), strings.TrimSpace(string(ndev)))
			}
		}
		if valid != len(tab) || valid < 2 {
			t.Errorf("%s: %d valid sysfs entries, %d in the verbs table (want the same, at least 2)", dev, valid, len(tab))
		}
		if _, gid := roceV2IPv4(t, c); gid.String() != ip {
			t.Errorf("%s RoCE v2 IPv4 GID %v, want %s", dev, gid, ip)
		}
	}
}

// TestGIDTableMatchesDiscovery cross-checks verbs with pkg/rdma's sysfs discovery (what the
// device plugin advertises): same devices, port state, MTU, GID indices, types and netdevs.
func TestGIDTableMatchesDiscovery(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	devs, _, err := rdma.Discover(rdma.DefaultRoots)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, d := range devs {
		if d.Name != vmtest.Device0 && d.Name != vmtest.Device1 {
			continue
		}
		found++
		c, err := Open(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		vmtest.Cleanup(t, c.Close)
		if len(d.Ports) != 1 {
			t.Fatalf("%s: discovery found %d ports", d.Name, len(d.Ports))
		}
		dp := d.Ports[0]
		pa, err := c.QueryPort(dp.Num)
		if err != nil {
			t.Fatal(err)
		}
		if dp.State != pa.State.String() || dp.LinkLayer != pa.LinkLayer || (dp.ActiveMTU != 0 && dp.ActiveMTU != pa.ActiveMTU.Bytes()) {
			t.Errorf("%s port %d: discovery %s/%s/MTU %d, verbs %v/%s/MTU %d", d.Name, dp.Num, dp.State, dp.LinkLayer,
				dp.ActiveMTU, pa.State, pa.LinkLayer, pa.ActiveMTU.Bytes())
		}
		tab, err := c.GIDTable(dp.Num)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab) != len(dp.GIDs) {
			t.Errorf("%s: verbs has %d GIDs, discovery %d", d.Name, len(tab), len(dp.GIDs))
		}
		byIndex := map[int]GIDEntry{}
		for _, e := range tab {
			byIndex[e.Index] = e
		}
		for _, g := range dp.GIDs {
			e, ok := byIndex[g.Index]
			if !ok || !e.GID.Equal(g.GID) || e.Type.SysfsName() != g.Type || e.Netdev != g.Netdev {
				t.Errorf("%s gid %d: discovery %v %q %q, verbs %+v", d.Name, g.Index, g.GID, g.Type, g.Netdev, e)
			}
		}
	}
	if found != 2 {
		t.Fatalf("discovery found %d of rxe0, rxe1 (devices %d)", found, len(devs))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// writeWindow RDMA-WRITEs pattern bytes [off, off+n) of the ring's byte stream from rxe0 into
// the ring registered on rxe1, through the whole-ring rkey (one work request) or through
// per-block rkeys (one work request per block touched, posted as one chain), and checks
// through a second, independent attachment that exactly those bytes changed.
func writeWindow(t *testing.T, p *pair, key dada.Key, r *ringMRs, off, n int, perBlock bool) {
	t.Helper()
	view := vmtest.ConnectRing(t, key, false)
	bs, nb := view.Data.BufSize(), view.Data.NBufs()
	for i := 0; i < nb; i++ {
		b := view.Data.Block(i)
		for j := range b {
			b[j] = 0xee
		}
	}
	src, smr := registered(t, p.src.pd, n, AccessLocalWrite)
	const seed = 42
	pattern.Fill(src, seed, uint64(off))
	base := uint64(uintptr(unsafe.Pointer(&src[0])))
	var wrs []SendWR
	if !perBlock {
		wrs = append(wrs, SendWR{ID: 1, Opcode: OpRDMAWrite, Addr: base, Length: uint32(n), LKey: smr.LKey(),
			RemoteAddr: r.block(0).Addr + uint64(off), RKey: r.block(0).RKey, Signaled: true})
	} else {
		for pos := off; pos < off+n; {
			blk, in := pos/bs, pos%bs
			k := min(bs-in, off+n-pos)
			b := r.block(blk)
			wrs = append(wrs, SendWR{ID: uint64(blk), Opcode: OpRDMAWrite, Addr: base + uint64(pos-off), Length: uint32(k),
				LKey: smr.LKey(), RemoteAddr: b.Addr + uint64(in), RKey: b.RKey, Signaled: true})
			pos += k
		}
	}
	if err := p.src.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	for _, wc := range waitCompletions(t, p.src.cq, len(wrs)) {
		if wc.Opcode != WCRDMAWrite {
			t.Errorf("completion opcode %v, want RDMA_WRITE", wc.Opcode)
		}
	}
	touched := map[int]bool{}
	for i := 0; i < nb; i++ {
		b := view.Data.Block(i)
		lo, hi := max(off-i*bs, 0), min(off+n-i*bs, bs) // window inside block i
		if lo < hi {
			touched[i] = true
			if bad, ok := pattern.Verify(b[lo:hi], seed, uint64(i*bs+lo)); !ok {
				t.Errorf("block %d: byte %d of the window differs", i, lo+bad)
			}
		} else {
			lo, hi = 0, 0
		}
		if notAll(b[:lo], 0xee) {
			t.Errorf("block %d: bytes before the window changed", i)
		}
		if notAll(b[hi:], 0xee) {
			t.Errorf("block %d: bytes after the window changed", i)
		}
	}
	if len(touched) < 3 {
		t.Fatalf("the window touched %d blocks; the test needs it to cross at least two boundaries", len(touched))
	}
}

func notAll(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return true
		}
	}
	return false
}

func TestRDMAWriteWholeRing(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	key := vmtest.NewRing(t, 4, 1<<20)
	h := vmtest.ConnectRing(t, key, true)
	r := registerRing(t, p.dst.pd, h.Data, true) // a page-aligned ring: one region
	// One 2 MiB+ write through one rkey, crossing the boundaries at 1 MiB and 2 MiB.
	writeWindow(t, p, key, r, 700001, 2<<20+12345, false)
}

// TestRDMAWriteWholeRingHugePages does the same over SHM_HUGETLB blocks (2 MiB pages).
func TestRDMAWriteWholeRingHugePages(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	const nr = "/proc/sys/vm/nr_hugepages"
	old, err := os.ReadFile(nr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nr, []byte("8"), 0o644); err != nil {
		t.Fatalf("reserve huge pages: %v", err)
	}
	t.Cleanup(func() { _ = os.WriteFile(nr, old, 0o644) })
	hp := dada.HugePageSize()
	if hp == 0 {
		t.Fatal("no huge page size in /proc/meminfo")
	}
	p := newPair(t)
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.HugePages = vmtest.NewKey(), 3, uint64(hp), true
	hc, err := dada.Create(cfg)
	if err != nil {
		t.Fatalf("create huge-page ring: %v", err)
	}
	vmtest.Cleanup(t, hc.Destroy)
	h := vmtest.ConnectRing(t, cfg.Key, true)
	if !h.Data.HugePages() || h.Data.PageSize() != hp {
		t.Fatalf("ring not on huge pages: HugePages=%v PageSize=%d", h.Data.HugePages(), h.Data.PageSize())
	}
	r := registerRing(t, p.dst.pd, h.Data, true) // a huge-page ring: one region
	writeWindow(t, p, cfg.Key, r, hp/2+3, hp+hp/2, false)
}

func TestRDMAWritePerBlock(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	for _, tc := range []struct {
		name   string
		nbufs  uint64
		bufsz  uint64
		off, n int
	}{
		{"unaligned", 8, 413184, 400000, 2*413184 + 1000},
		{"aligned", 4, 1 << 20, 700001, 2<<20 + 12345},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := vmtest.NewRing(t, tc.nbufs, tc.bufsz)
			h := vmtest.ConnectRing(t, key, true)
			r := registerRing(t, p.dst.pd, h.Data, false)
			if len(r.mrs) != int(tc.nbufs) {
				t.Fatalf("%d regions, want one per block: %d", len(r.mrs), tc.nbufs)
			}
			writeWindow(t, p, key, r, tc.off, tc.n, true)
		})
	}
}

// TestSendAndImmediateIntoRing receives SEND_WITH_IMM into ring blocks (receive work
// requests point into the registration) and an RDMA_WRITE_WITH_IMM notification.
func TestSendAndImmediateIntoRing(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	key := vmtest.NewRing(t, 4, 256<<10)
	h := vmtest.ConnectRing(t, key, true)
	r := registerRing(t, p.dst.pd, h.Data, true)
	const msg = 64 << 10
	var recvs []RecvWR
	for i := 0; i < 4; i++ {
		b := r.block(i)
		recvs = append(recvs, RecvWR{ID: uint64(100 + i), Addr: b.Addr, Length: msg, LKey: b.LKey})
	}
	recvs = append(recvs, RecvWR{ID: 200}) // consumed by the WRITE_WITH_IMM
	if err := p.dst.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	src, smr := registered(t, p.src.pd, 4*msg, AccessLocalWrite)
	pattern.Fill(src, 7, 0)
	base := uint64(uintptr(unsafe.Pointer(&src[0])))
	var wrs []SendWR
	for i := 0; i < 4; i++ {
		op := OpSendWithImm
		if i == 0 {
			op = OpSend // plain SEND: no immediate
		}
		wrs = append(wrs, SendWR{ID: uint64(i), Opcode: op, Addr: base + uint64(i*msg), Length: msg, LKey: smr.LKey(),
			Imm: 0xabc00000 + uint32(i), Signaled: i == 3})
	}
	b3 := r.block(3)
	wrs = append(wrs, SendWR{ID: 9, Opcode: OpRDMAWriteWithImm, Addr: base, Length: 4096, LKey: smr.LKey(),
		RemoteAddr: b3.Addr + msg, RKey: b3.RKey, Imm: 0xfeed, Signaled: true})
	if err := p.src.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	waitCompletions(t, p.src.cq, 2) // the last SEND and the WRITE_WITH_IMM are signaled
	got := waitCompletions(t, p.dst.cq, 5)
	for i, wc := range got[:4] {
		wantImm := i > 0
		if wc.ID != uint64(100+i) || wc.Opcode != WCRecv || wc.HasImm != wantImm || (wantImm && wc.Imm != 0xabc00000+uint32(i)) || wc.ByteLen != msg {
			t.Errorf("receive %d: %+v", i, wc)
		}
		if bad, ok := pattern.Verify(h.Data.Block(i)[:msg], 7, uint64(i*msg)); !ok {
			t.Errorf("block %d: byte %d differs", i, bad)
		}
	}
	if wc := got[4]; wc.ID != 200 || wc.Opcode != WCRecvRDMAWithImm || !wc.HasImm || wc.Imm != 0xfeed {
		t.Errorf("write-with-immediate completion: %+v", wc)
	}
	if bad, ok := pattern.Verify(h.Data.Block(3)[msg:msg+4096], 7, 0); !ok {
		t.Errorf("RDMA_WRITE_WITH_IMM data: byte %d differs", bad)
	}
}

// TestPostRecvChunksAndFlush posts more receive work requests than one cgo call carries and
// polls more completions than one call returns: moving the QP to ERR flushes all of them,
// in order, each naming WR_FLUSH_ERR.
func TestPostRecvChunksAndFlush(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	c, err := Open(vmtest.Device0)
	if err != nil {
		t.Fatal(err)
	}
	vmtest.Cleanup(t, c.Close)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQConfig{Entries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 600})
	if err != nil {
		t.Fatal(err)
	}
	n := qp.Caps().MaxRecvWR // the device may round up: fill the queue exactly
	if n < 600 || n > cq.Entries() {
		t.Fatalf("receive queue of %d for 600 requested (CQ %d)", n, cq.Entries())
	}
	if err := qp.ToInit(vmtest.Port, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	wrs := make([]RecvWR, n)
	for i := range wrs {
		wrs[i] = RecvWR{ID: uint64(1000 + i)}
	}
	if err := qp.PostRecv(wrs); err != nil {
		t.Fatal(err)
	}
	if err := qp.ToError(); err != nil {
		t.Fatal(err)
	}
	var got []WorkCompletion
	buf := make([]WorkCompletion, 200)
	for tries := 0; len(got) < n && tries < 10000; tries++ {
		k, err := cq.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:k]...)
	}
	if len(got) != n {
		t.Fatalf("%d flushed completions, want %d", len(got), n)
	}
	for i, wc := range got {
		if wc.ID != uint64(1000+i) || wc.Status != WCWRFlushErr || !strings.Contains(wc.Err().Error(), "IBV_WC_WR_FLUSH_ERR") {
			t.Fatalf("completion %d: %+v (%v)", i, wc, wc.Err())
		}
	}
}

// TestCompletionErrorStatus writes with a wrong rkey: the completion names the status.
func TestCompletionErrorStatus(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	_, mr := registered(t, p.src.pd, 1<<16, AccessLocalWrite)
	err := p.src.qp.PostSend([]SendWR{{ID: 5, Opcode: OpRDMAWrite, Addr: uint64(mr.Addr()), Length: 4096, LKey: mr.LKey(),
		RemoteAddr: uint64(mr.Addr()), RKey: 0xdeadbe, Signaled: true}})
	if err != nil {
		t.Fatal(err)
	}
	wcs := make([]WorkCompletion, 4)
	n, err := p.src.cq.PollWait(t.Context(), wcs)
	if err != nil || n != 1 {
		t.Fatalf("PollWait = %d, %v", n, err)
	}
	cerr := wcs[0].Err()
	var ce *CompletionError
	if !errors.As(cerr, &ce) || ce.Status != WCRemAccessErr || ce.ID != 5 || !strings.Contains(cerr.Error(), "IBV_WC_REM_ACCESS_ERR") {
		t.Errorf("completion error %v, want REM_ACCESS_ERR for wr_id 5", cerr)
	}
	if st, err := p.src.qp.State(); err != nil || st != QPErr {
		t.Errorf("QP state after the error: %v, %v; want ERR", st, err)
	}
}

// TestCloseCascade closes the device with every kind of object open: everything goes, in
// order, exactly once; later calls are harmless or return ErrClosed.
func TestCloseCascade(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	c, err := Open(vmtest.Device0)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQConfig{Entries: 16, Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1 << 30, MaxRecvWR: 8})
	if err != nil {
		t.Fatal(err)
	}
	if qp.Caps().MaxSendWR > c.Attr().MaxQPWR || !strings.Contains(qp.Clamped(), "max_send_wr") {
		t.Errorf("MaxSendWR 1<<30 not clamped: caps %+v, note %q", qp.Caps(), qp.Clamped())
	}
	_, mr := registered(t, pd, 1<<16, AccessLocalWrite)
	if got := Live(); got.Contexts < 1 || got.PDs < 1 || got.CQs < 1 || got.QPs < 1 || got.MRs < 1 || got.CompChannels < 1 {
		t.Fatalf("live objects %+v, want one of each", got)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, cl := range map[string]func() error{"qp": qp.Close, "cq": cq.Close, "mr": mr.Close, "pd": pd.Close, "ctx": c.Close} {
		if err := cl(); err != nil {
			t.Errorf("second %s.Close: %v", name, err)
		}
	}
	if err := qp.PostSend([]SendWR{{Opcode: OpSend}}); !errors.Is(err, ErrClosed) {
		t.Errorf("PostSend after Close: %v", err)
	}
	if err := qp.ToError(); !errors.Is(err, ErrClosed) {
		t.Errorf("ToError after Close: %v", err)
	}
	if _, err := qp.State(); !errors.Is(err, ErrClosed) || qp.QPN() == 0 {
		t.Errorf("State after Close: %v (QPN %d)", err, qp.QPN())
	}
	if _, err := cq.PollWait(t.Context(), make([]WorkCompletion, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("PollWait after Close: %v", err)
	}
	if _, err := cq.Poll(make([]WorkCompletion, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Poll after Close: %v", err)
	}
	if _, err := c.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocPD after Close: %v", err)
	}
}

// TestPortGIDsDiscoverSame: discovery with the GID table from one verbs query per port
// (PortGIDs) finds exactly what the sysfs scan of every entry finds, and leaves nothing open.
func TestPortGIDsDiscoverSame(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	sysfs, _, err := rdma.Discover(rdma.DefaultRoots)
	if err != nil {
		t.Fatal(err)
	}
	r := rdma.DefaultRoots
	calls := 0
	r.GIDTable = func(dev string, port int) ([]rdma.GID, error) {
		calls++
		return PortGIDs(dev, port)
	}
	devs, _, err := rdma.Discover(r)
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 {
		t.Errorf("PortGIDs called %d times, want once per port of rxe0 and rxe1", calls)
	}
	if !reflect.DeepEqual(devs, sysfs) {
		t.Errorf("discovery with PortGIDs =\n%+v\nsysfs scan =\n%+v", devs, sysfs)
	}
	for _, d := range devs {
		if len(d.Ports) == 0 || len(d.Ports[0].GIDs) == 0 || d.Ports[0].GIDs[0].Netdev == "" {
			t.Errorf("%s: ports %+v, want GIDs with netdevs", d.Name, d.Ports)
		}
	}
	if _, err := PortGIDs("rxe9", 1); err == nil {
		t.Error("PortGIDs(rxe9) succeeded")
	}
}

// TestWaitEventInPoller: a waiter parked in Go's poller on the completion channel wakes for a
// completion event, for its context's cancellation and for Close; a cancelled wait leaves the
// next one working.
func TestWaitEventInPoller(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	cq := p.src.cq
	wait := func(ctx context.Context) <-chan error {
		if err := cq.Arm(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cq.WaitEvent(ctx) }()
		return done
	}
	result := func(done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute): // a hang guard, not a timing check
			t.Fatal("WaitEvent did not return")
			return nil
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := wait(ctx)
	time.Sleep(50 * time.Millisecond) // let it park (the test holds either way)
	cancel()
	if err := result(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitEvent after cancel = %v, want context.Canceled", err)
	}

	done = wait(t.Context())
	buf, smr := registered(t, p.src.pd, 1<<16, AccessLocalWrite)
	_, dmr := registered(t, p.dst.pd, 1<<16, AccessLocalWrite|AccessRemoteWrite)
	base := uint64(uintptr(unsafe.Pointer(&buf[0])))
	if err := p.src.qp.PostSend([]SendWR{{ID: 7, Opcode: OpRDMAWrite, Addr: base, Length: 4096, LKey: smr.LKey(),
		RemoteAddr: uint64(dmr.Addr()), RKey: dmr.RKey(), Signaled: true}}); err != nil {
		t.Fatal(err)
	}
	if err := result(done); err != nil {
		t.Fatalf("WaitEvent for a completion = %v", err)
	}
	wcs := make([]WorkCompletion, 4)
	if n, err := cq.Poll(wcs); n != 1 || err != nil || wcs[0].ID != 7 || wcs[0].Err() != nil {
		t.Fatalf("Poll after the event = %d, %v: %+v", n, err, wcs[0])
	}

	done = wait(t.Context())
	time.Sleep(50 * time.Millisecond)
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := result(done); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitEvent across Close = %v, want ErrClosed", err)
	}
}

// TestEachEvent: one EachEvent call delivers every completion event Arm requested, each to
// fn, and returns for its context's cancellation and for Close.
func TestEachEvent(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	cq := p.src.cq
	buf, smr := registered(t, p.src.pd, 1<<16, AccessLocalWrite)
	_, dmr := registered(t, p.dst.pd, 1<<16, AccessLocalWrite|AccessRemoteWrite)
	base := uint64(uintptr(unsafe.Pointer(&buf[0])))
	each := func(ctx context.Context) (<-chan struct{}, <-chan error) {
		events, done := make(chan struct{}, 8), make(chan error, 1)
		go func() { done <- cq.EachEvent(ctx, func() { events <- struct{}{} }) }()
		return events, done
	}
	within := func(what string, ch <-chan struct{}) {
		select {
		case <-ch:
		case <-time.After(time.Minute): // a hang guard, not a timing check
			t.Fatalf("no %s within a minute", what)
		}
	}
	result := func(done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatal("EachEvent did not return")
			return nil
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	events, done := each(ctx)
	wcs := make([]WorkCompletion, 4)
	for i := range 3 {
		if err := cq.Arm(); err != nil {
			t.Fatal(err)
		}
		if err := p.src.qp.PostSend([]SendWR{{ID: uint64(i), Opcode: OpRDMAWrite, Addr: base, Length: 4096, LKey: smr.LKey(),
			RemoteAddr: uint64(dmr.Addr()), RKey: dmr.RKey(), Signaled: true}}); err != nil {
			t.Fatal(err)
		}
		within(fmt.Sprintf("event %d", i), events)
		if n, err := cq.Poll(wcs); n != 1 || err != nil || wcs[0].ID != uint64(i) || wcs[0].Err() != nil {
			t.Fatalf("Poll after event %d = %d, %v: %+v", i, n, err, wcs[0])
		}
	}
	cancel()
	if err := result(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("EachEvent after cancel = %v, want context.Canceled", err)
	}
	select {
	case <-events:
		t.Fatal("an event without a completion")
	default:
	}

	_, done = each(t.Context())
	time.Sleep(50 * time.Millisecond) // let it park (the test holds either way)
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := result(done); !errors.Is(err, ErrClosed) {
		t.Fatalf("EachEvent across Close = %v, want ErrClosed", err)
	}
}
