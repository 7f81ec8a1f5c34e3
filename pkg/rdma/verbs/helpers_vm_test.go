//go:build vm

package verbs

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// ringMRs is a ring's data blocks registered as plain memory regions, as a capture receiver
// registers them: one over the whole ring (its blocks mapped back to back) or one per block.
type ringMRs struct {
	mrs   []*MR
	bs    int
	whole bool
}

// blockKeys is what a work request into one ring block needs.
type blockKeys struct {
	Addr       uint64
	LKey, RKey uint32
}

// registerRing registers ring's blocks on pd until the test ends: as one region when whole
// (failing the test when the blocks are not back to back), else one region per block.
func registerRing(t testing.TB, pd *PD, ring *dada.Ring, whole bool) *ringMRs {
	t.Helper()
	r := &ringMRs{bs: ring.BufSize(), whole: whole}
	regions := make([][]byte, 0, ring.NBufs())
	if whole {
		region, ok, why := ring.Contiguous()
		if !ok {
			t.Fatalf("ring %s is not contiguous: %s", ring.Key(), why)
		}
		regions = append(regions, region)
	} else {
		for i := 0; i < ring.NBufs(); i++ {
			regions = append(regions, ring.Block(i))
		}
	}
	for _, b := range regions {
		mr, err := pd.RegisterMR(b, AccessLocalWrite|AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		vmtest.Cleanup(t, mr.Close)
		r.mrs = append(r.mrs, mr)
	}
	return r
}

// block returns the address and keys of block i.
func (r *ringMRs) block(i int) blockKeys {
	if r.whole {
		mr := r.mrs[0]
		return blockKeys{Addr: uint64(mr.Addr()) + uint64(i*r.bs), LKey: mr.LKey(), RKey: mr.RKey()}
	}
	mr := r.mrs[i]
	return blockKeys{Addr: uint64(mr.Addr()), LKey: mr.LKey(), RKey: mr.RKey()}
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
	vmtest.Cleanup(t, func() error { return Munmap(buf) })
	mr, err := pd.RegisterMR(buf, access)
	if err != nil {
		t.Fatal(err)
	}
	vmtest.Cleanup(t, mr.Close)
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
