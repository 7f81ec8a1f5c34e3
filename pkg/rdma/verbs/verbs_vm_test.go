//go:build vm

package verbs

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

func TestDeviceAndPortQuery(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
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
	cleanup(t, c.Close)
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
	leakCheck(t)
	for dev, ip := range map[string]string{vmtest.Device0: vmtest.IP0, vmtest.Device1: vmtest.IP1} {
		c, err := Open(dev)
		if err != nil {
			t.Fatal(err)
		}
		cleanup(t, c.Close)
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
	leakCheck(t)
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
		cleanup(t, c.Close)
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

// cleanup runs close when the test ends and fails the test if it fails.
func cleanup(t *testing.T, close func() error) {
	t.Cleanup(func() {
		if err := close(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func tlog(t *testing.T) func(string) { return func(s string) { t.Log(s) } }

func TestRegistrationModes(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
	c, err := Open(vmtest.Device1)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, c.Close)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	aligned := newRing(t, 4, 1<<20)
	unaligned := newRing(t, 8, 413184)

	var logged []string
	logf := func(s string) { logged = append(logged, s) }
	cases := []struct {
		name       string
		key        dada.Key
		contiguous bool
		mode       MRMode
		wantMode   MRMode
		regions    int
		reason     string
	}{
		{"aligned/auto", aligned, true, Auto, WholeRing, 1, "blocks contiguous"},
		{"aligned/wholering", aligned, true, WholeRing, WholeRing, 1, "blocks contiguous"},
		{"aligned/perblock", aligned, true, PerBlock, PerBlock, 4, "per-block registration requested"},
		{"unaligned/auto", unaligned, true, Auto, PerBlock, 8, "block size 413184 is not a multiple of the page size"},
		{"unaligned/perblock", unaligned, true, PerBlock, PerBlock, 8, "per-block registration requested"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := connectRing(t, tc.key, tc.contiguous)
			r, err := Register(pd, h.Data, tc.mode, RegisterOptions{Log: logf, Name: "key=" + h.Data.Key().String()})
			if err != nil {
				t.Fatal(err)
			}
			cleanup(t, r.Close)
			if r.Mode() != tc.wantMode || r.Regions() != tc.regions || !strings.Contains(r.Reason(), tc.reason) {
				t.Errorf("mode %v regions %d reason %q; want %v %d %q", r.Mode(), r.Regions(), r.Reason(), tc.wantMode, tc.regions, tc.reason)
			}
			if want := uint64(h.Data.NBufs() * h.Data.BufSize()); r.Bytes() != want {
				t.Errorf("bytes %d, want %d", r.Bytes(), want)
			}
			tab := r.RegionTable()
			if len(tab) != tc.regions {
				t.Fatalf("region table has %d entries, want %d", len(tab), tc.regions)
			}
			var sum uint64
			for i, reg := range tab {
				sum += reg.Len
				if tc.wantMode == PerBlock && (reg.Addr != r.Block(i).Addr || reg.RKey != r.Block(i).RKey || reg.Len != uint64(h.Data.BufSize())) {
					t.Errorf("region %d %+v does not match block %d %+v", i, reg, i, r.Block(i))
				}
			}
			if sum != r.Bytes() || tab[0].Addr != r.Block(0).Addr {
				t.Errorf("region table %+v does not cover the ring (%d bytes at %#x)", tab, r.Bytes(), r.Block(0).Addr)
			}
			if Live().MRs != int64(tc.regions) {
				t.Errorf("%d live MRs, want %d", Live().MRs, tc.regions)
			}
			for i := 0; i < h.Data.NBufs(); i++ {
				b := r.Block(i)
				if b.Addr != uint64(h.Data.BlockAddr(i)) {
					t.Errorf("block %d address %#x, ring has it at %#x", i, b.Addr, h.Data.BlockAddr(i))
				}
				if tc.wantMode == WholeRing && (b.RKey != r.Block(0).RKey || b.LKey != r.Block(0).LKey) {
					t.Errorf("block %d keys differ from block 0 in WholeRing mode", i)
				}
				if tc.wantMode == PerBlock && i > 0 && b.RKey == r.Block(i-1).RKey {
					t.Errorf("blocks %d and %d share rkey %#x in PerBlock mode", i-1, i, b.RKey)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if Live().MRs != 0 {
				t.Errorf("%d MRs live after Close", Live().MRs)
			}
		})
	}
	want := "Registered ring key=" + aligned.String() + " mode=WholeRing regions=1 bytes=4194304 (blocks contiguous)"
	if len(logged) == 0 || logged[0] != want {
		t.Errorf("first log line %q, want %q", logged, want)
	}
	if len(logged) != len(cases) {
		t.Errorf("%d log lines for %d registrations", len(logged), len(cases))
	}

	// WholeRing is impossible for a ring whose blocks are not back to back: a clear error.
	for _, tc := range []struct {
		key        dada.Key
		contiguous bool
		why        string
	}{{unaligned, true, "not a multiple of the page size"}, {aligned, false, "not attached contiguously"}} {
		h := connectRing(t, tc.key, tc.contiguous)
		if _, ok, _ := h.Data.Contiguous(); ok {
			continue // the kernel happened to attach the blocks back to back
		}
		_, err := Register(pd, h.Data, WholeRing, RegisterOptions{Log: logf, Name: "key=" + h.Data.Key().String()})
		if !errors.Is(err, ErrNotContiguous) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("WholeRing on ring %s: %v, want ErrNotContiguous saying %q", tc.key, err, tc.why)
		}
	}
	if Live().MRs != 0 {
		t.Errorf("%d MRs live after failed registrations", Live().MRs)
	}
}

// writeWindow RDMA-WRITEs pattern bytes [off, off+n) of the ring's byte stream from rxe0 into
// the ring registered on rxe1, through the whole-ring rkey (one work request) or through
// per-block rkeys (one work request per block touched, posted as one chain), and checks
// through a second, independent attachment that exactly those bytes changed.
func writeWindow(t *testing.T, p *pair, key dada.Key, r *Registration, off, n int, perBlock bool) {
	t.Helper()
	view := connectRing(t, key, false)
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
			RemoteAddr: r.Block(0).Addr + uint64(off), RKey: r.Block(0).RKey, Signaled: true})
	} else {
		for pos := off; pos < off+n; {
			blk, in := pos/bs, pos%bs
			k := min(bs-in, off+n-pos)
			b := r.Block(blk)
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
	leakCheck(t)
	p := newPair(t)
	key := newRing(t, 4, 1<<20)
	h := connectRing(t, key, true)
	r, err := Register(p.dst.pd, h.Data, Auto, RegisterOptions{Log: tlog(t)})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r.Close)
	if r.Mode() != WholeRing {
		t.Fatalf("Auto chose %v (%s) for a page-aligned ring", r.Mode(), r.Reason())
	}
	// One 2 MiB+ write through one rkey, crossing the boundaries at 1 MiB and 2 MiB.
	writeWindow(t, p, key, r, 700001, 2<<20+12345, false)
}

// TestRDMAWriteWholeRingHugePages does the same over SHM_HUGETLB blocks (2 MiB pages).
func TestRDMAWriteWholeRingHugePages(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
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
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.HugePages = newKey(), 3, uint64(hp), true
	hc, err := dada.Create(cfg)
	if err != nil {
		t.Fatalf("create huge-page ring: %v", err)
	}
	cleanup(t, hc.Destroy)
	h := connectRing(t, cfg.Key, true)
	if !h.Data.HugePages() || h.Data.PageSize() != hp {
		t.Fatalf("ring not on huge pages: HugePages=%v PageSize=%d", h.Data.HugePages(), h.Data.PageSize())
	}
	r, err := Register(p.dst.pd, h.Data, Auto, RegisterOptions{Log: tlog(t)})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r.Close)
	if r.Mode() != WholeRing {
		t.Fatalf("Auto chose %v (%s) for a huge-page ring", r.Mode(), r.Reason())
	}
	writeWindow(t, p, cfg.Key, r, hp/2+3, hp+hp/2, false)
}

func TestRDMAWritePerBlock(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
	p := newPair(t)
	for _, tc := range []struct {
		name   string
		nbufs  uint64
		bufsz  uint64
		mode   MRMode
		off, n int
	}{
		{"unaligned-auto", 8, 413184, Auto, 400000, 2*413184 + 1000},
		{"aligned-forced", 4, 1 << 20, PerBlock, 700001, 2<<20 + 12345},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := newRing(t, tc.nbufs, tc.bufsz)
			h := connectRing(t, key, true)
			r, err := Register(p.dst.pd, h.Data, tc.mode, RegisterOptions{Log: tlog(t)})
			if err != nil {
				t.Fatal(err)
			}
			cleanup(t, r.Close)
			if r.Mode() != PerBlock || r.Regions() != int(tc.nbufs) {
				t.Fatalf("mode %v with %d regions, want PerBlock with %d", r.Mode(), r.Regions(), tc.nbufs)
			}
			writeWindow(t, p, key, r, tc.off, tc.n, true)
		})
	}
}

// TestSendAndImmediateIntoRing receives SEND_WITH_IMM into ring blocks (receive work
// requests point into the registration) and an RDMA_WRITE_WITH_IMM notification.
func TestSendAndImmediateIntoRing(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
	p := newPair(t)
	key := newRing(t, 4, 256<<10)
	h := connectRing(t, key, true)
	r, err := Register(p.dst.pd, h.Data, Auto, RegisterOptions{Log: tlog(t)})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r.Close)
	const msg = 64 << 10
	var recvs []RecvWR
	for i := 0; i < 4; i++ {
		b := r.Block(i)
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
	b3 := r.Block(3)
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
	leakCheck(t)
	c, err := Open(vmtest.Device0)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, c.Close)
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
	leakCheck(t)
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
	leakCheck(t)
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

// TestRegisterMemlockUnprivileged registers a 32 MiB ring as a non-root user with an 8 MiB
// memlock limit: the pre-check fails with both numbers and the fix, and the kernel agrees.
func TestRegisterMemlockUnprivileged(t *testing.T) {
	vmtest.Require(t)
	leakCheck(t)
	const envKey = "RINGCAP_TEST_RING_KEY"
	var env []string
	if !vmtest.IsUnprivilegedChild(t) {
		env = []string{envKey + "=" + newRing(t, 4, 8<<20).String()}
	}
	vmtest.RunUnprivileged(t, vmtest.Unprivileged{MemlockBytes: 8 << 20, Env: env}, func(t *testing.T) {
		key, err := dada.ParseKey(os.Getenv(envKey))
		if err != nil {
			t.Fatal(err)
		}
		h := connectRing(t, key, true)
		c, err := Open(vmtest.Device1)
		if err != nil {
			t.Fatal(err)
		}
		cleanup(t, c.Close)
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []MRMode{Auto, PerBlock} {
			_, err = Register(pd, h.Data, mode, RegisterOptions{Log: tlog(t), Name: "key=" + h.Data.Key().String()})
			if !errors.Is(err, ErrMemlock) {
				t.Fatalf("Register %v as uid %d with memlock 8 MiB: %v, want ErrMemlock", mode, os.Getuid(), err)
			}
			for _, want := range []string{"33554432", "8388608", "CAP_IPC_LOCK", "IPC_LOCK capability", "memlock limit"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not mention %q", err, want)
				}
			}
			t.Logf("%v: %v", mode, err)
		}
		if Live().MRs != 0 {
			t.Errorf("%d MRs live after the refused registration", Live().MRs)
		}
		// The kernel agrees: 32 MiB cannot be pinned, 8 MiB can.
		region, ok, why := h.Data.Contiguous()
		if !ok {
			t.Fatalf("ring not contiguous: %s", why)
		}
		if mr, err := pd.RegisterMR(region, AccessLocalWrite); !errors.Is(err, unix.ENOMEM) {
			if mr != nil {
				_ = mr.Close()
			}
			t.Errorf("ibv_reg_mr of 32 MiB with memlock 8 MiB: %v, want ENOMEM", err)
		}
		mr, err := pd.RegisterMR(h.Data.Block(0), AccessLocalWrite)
		if err != nil {
			t.Fatalf("ibv_reg_mr of one 8 MiB block with memlock 8 MiB: %v", err)
		}
		_ = mr.Close()
	})
}
