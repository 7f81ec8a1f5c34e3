//go:build vm

package verbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// buffers registers a source buffer filled with a pattern on src and a zeroed, remotely
// writable target on dst, n bytes each.
func buffers(t *testing.T, p *pair, n int) (src, dst []byte, smr, dmr *MR) {
	t.Helper()
	src, smr = registered(t, p.src.pd, n, AccessLocalWrite)
	pattern.Fill(src, 11, 0)
	dst, dmr = registered(t, p.dst.pd, n, AccessLocalWrite|AccessRemoteWrite)
	return src, dst, smr, dmr
}

// pinnedTo counts the threads of this process whose CPU set is exactly cpus.
func pinnedTo(t *testing.T, cpus string) int {
	t.Helper()
	n := 0
	for _, set := range rdmatest.ThreadCPUSets(t) {
		if set == cpus {
			n++
		}
	}
	return n
}

// A posting thread posts the batches handed to it in order, from the CPU it is pinned to,
// and leaves nothing behind when closed.
func TestPostThreadPostsBatchesInOrder(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	p := newPair(t)
	const msg, n = 4096, 10
	src, dst, smr, dmr := buffers(t, p, n*msg)
	before := pinnedTo(t, "0")
	pt, err := StartPostThread(0, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	if got := pinnedTo(t, "0"); got != before+1 {
		t.Errorf("threads pinned to CPU 0: %d, %d before the posting thread started", got, before)
	}
	sbase, dbase := uint64(uintptr(unsafe.Pointer(&src[0]))), uint64(uintptr(unsafe.Pointer(&dst[0])))
	wr := func(i int) SendWR {
		return SendWR{ID: uint64(i), Opcode: OpRDMAWrite, Addr: sbase + uint64(i*msg), Length: msg, LKey: smr.LKey(),
			RemoteAddr: dbase + uint64(i*msg), RKey: dmr.RKey(), Signaled: true}
	}
	// Batches of 3, 3, 4: the queue (16) never holds more than it can.
	for i := 0; i < n; {
		k := min(3+i/6, n-i)
		var batch []SendWR
		for j := range k {
			batch = append(batch, wr(i+j))
		}
		if err := pt.Post(p.src.qp, 7, batch); err != nil {
			t.Fatal(err)
		}
		i += k
	}
	for i, wc := range waitCompletions(t, p.src.cq, n) {
		if wc.ID != uint64(i) {
			t.Errorf("completion %d is of work request %d: out of order", i, wc.ID)
		}
	}
	if bad, ok := pattern.Verify(dst, 11, 0); !ok {
		t.Errorf("target differs at byte %d", bad)
	}
	if f := pt.Close(); f != nil {
		t.Errorf("failures after a clean stream: %+v", f)
	}
	if got := pinnedTo(t, "0"); got != before {
		t.Errorf("threads pinned to CPU 0 after Close: %d, want %d", got, before)
	}
	if err := pt.Post(p.src.qp, 7, []SendWR{wr(0)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Post after Close: %v, want ErrClosed", err)
	}
}

// A post that fails (a queue pair that never reached RTS) is reported through Failed, and
// Close names every batch that was not posted: the failed one and all after it.
func TestPostThreadReportsBatchesNotPosted(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	s := newSide(t, vmtest.Device0) // INIT: the kernel refuses its doorbell
	buf, mr := registered(t, s.pd, 4096, AccessLocalWrite)
	pt, err := StartPostThread(-1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	wr := SendWR{Opcode: OpRDMAWrite, Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: 64, LKey: mr.LKey(), RKey: 1, Signaled: true}
	sizes := []int{2, 3, 1}
	for i, k := range sizes {
		var batch []SendWR
		for j := range k {
			w := wr
			w.ID = uint64(10*i + j)
			batch = append(batch, w)
		}
		if err := pt.Post(s.qp, 5+i, batch); err != nil {
			t.Fatal(err)
		}
	}
	<-pt.Failed()
	fails := pt.Close()
	if len(fails) != len(sizes) {
		t.Fatalf("failures %+v, want one per batch (%d)", fails, len(sizes))
	}
	for i, f := range fails {
		if f.Tag != 5+i || f.N != sizes[i] || f.First.ID != uint64(10*i) {
			t.Errorf("failure %d: tag %d, %d work requests, first %d; want tag %d, %d, first %d", i, f.Tag, f.N, f.First.ID, 5+i, sizes[i], 10*i)
		}
		if !errors.Is(f.Err, syscall.EINVAL) || !strings.Contains(f.Err.Error(), "post send work request 0 of 2") {
			t.Errorf("failure %d: %v, want the first batch's EINVAL", i, f.Err)
		}
	}
	if again := pt.Close(); len(again) != len(fails) {
		t.Errorf("second Close: %+v", again)
	}
}

// A posting thread that cannot be pinned is not started and says why.
func TestPostThreadOnAMissingCPU(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, Live)
	pt, err := StartPostThread(1000, 8) // the VM has 2 CPUs
	if err == nil {
		pt.Close()
		t.Fatal("a posting thread pinned to CPU 1000 started")
	}
	if !strings.Contains(err.Error(), "CPU 1000") || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("error %q: want it to name CPU 1000 and EINVAL", err)
	}
}
