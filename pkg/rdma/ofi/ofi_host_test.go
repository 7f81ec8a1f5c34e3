//go:build linux && cgo

package ofi

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The providers tested on the host, loopback only: tcp;ofi_rxm bound to 127.0.0.1 on
// domain lo, with and without FI_DELIVERY_COMPLETE, and shm (one host by definition).
var providers = []struct {
	name  string
	hints Hints
}{
	{"tcp", Hints{Provider: "tcp;ofi_rxm", Domain: "lo", Node: "127.0.0.1", Source: true, Caps: CapMsg | CapRMA | CapRemoteComm}},
	{"tcp-delivery-complete", Hints{Provider: "tcp;ofi_rxm", Domain: "lo", Node: "127.0.0.1", Source: true,
		Caps: CapMsg | CapRMA | CapRemoteComm, DeliveryComplete: true}},
	{"shm", Hints{Provider: "shm", Caps: CapMsg | CapRMA}},
}

// checkNoLeaks fails the test when libfabric objects are still open at its end.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	before := Live()
	t.Cleanup(func() {
		if got := Live(); got != before {
			t.Errorf("libfabric objects leaked: %+v, before the test %+v", got, before)
		}
	})
}

// side is one process's view: a domain with an AV, one CQ and one endpoint.
type side struct {
	d    *Domain
	av   *AV
	cq   *CQ
	ep   *Endpoint
	name []byte
	got  []Completion // completions read and not yet taken by collect
}

func openSide(t *testing.T, h Hints, wait bool) *side {
	t.Helper()
	return openSideWith(t, h, wait, false)
}

// openSideWith is openSide with a choice of selective completion for the endpoint.
func openSideWith(t *testing.T, h Hints, wait, selective bool) *side {
	t.Helper()
	return openSideCQ(t, h, CQConfig{Size: 256, Wait: wait}, selective)
}

// openSideCQ is openSide with the completion queue opened as cq asks.
func openSideCQ(t *testing.T, h Hints, cq CQConfig, selective bool) *side {
	t.Helper()
	d, err := Open(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close domain: %v", err)
		}
	})
	s := &side{d: d}
	if s.av, err = d.OpenAV(8); err != nil {
		t.Fatal(err)
	}
	if s.cq, err = d.OpenCQ(cq); err != nil {
		t.Fatal(err)
	}
	if s.ep, err = d.OpenEndpoint(EndpointConfig{AV: s.av, TxCQ: s.cq, RxCQ: s.cq, SelectiveCompletion: selective}); err != nil {
		t.Fatal(err)
	}
	if s.name, err = s.ep.Name(); err != nil {
		t.Fatal(err)
	}
	return s
}

// insert puts peer's endpoint name into s's AV.
func (s *side) insert(t *testing.T, peer *side) Addr {
	t.Helper()
	a, err := s.av.Insert(peer.name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// mmapped returns n bytes outside the Go heap, unmapped at the end of the test.
func mmapped(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

func register(t *testing.T, d *Domain, b []byte, access Caps) *MR {
	t.Helper()
	mr, err := d.RegisterMR(uintptr(unsafe.Pointer(&b[0])), len(b), access)
	if err != nil {
		t.Fatal(err)
	}
	return mr
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// poll reads s's CQ (reading progresses libfabric) into s.got.
func (s *side) poll(t *testing.T) {
	t.Helper()
	buf := make([]Completion, 16)
	n, err := s.cq.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	s.got = append(s.got, buf[:n]...)
}

// hangGuard fails the test when libfabric has not done its work after a minute: a guard
// against a hang, not a speed check.
type hangGuard time.Time

func newHangGuard() hangGuard { return hangGuard(time.Now().Add(time.Minute)) }

func (g hangGuard) check(t *testing.T, what string) {
	t.Helper()
	if time.Now().After(time.Time(g)) {
		t.Fatalf("%s: still waiting after a minute", what)
	}
}

// post runs a post, and while the provider answers FI_EAGAIN polls every side (as
// libfabric asks: completions progress the transfers) and posts again.
func post(t *testing.T, fn func() error, sides ...*side) {
	t.Helper()
	g := newHangGuard()
	for {
		err := fn()
		if !errors.Is(err, ErrAgain) {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		for _, s := range sides {
			s.poll(t)
		}
		g.check(t, err.Error())
	}
}

// collect polls every side until want completions have arrived at s, and takes them.
func collect(t *testing.T, s *side, want int, others ...*side) []Completion {
	t.Helper()
	g := newHangGuard()
	for len(s.got) < want {
		s.poll(t)
		for _, o := range others {
			o.poll(t)
		}
		g.check(t, fmt.Sprintf("%d of %d completions: %+v", len(s.got), want, s.got))
	}
	out := s.got[:want:want]
	s.got = s.got[want:]
	return out
}

func TestDiscoverReportsWhatEachProviderOffers(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			infos, err := Discover(p.hints)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range infos {
				t.Log(i)
				if i.Provider != p.hints.Provider {
					t.Errorf("provider %q, asked for %q", i.Provider, p.hints.Provider)
				}
				if p.hints.Domain != "" && i.Domain != p.hints.Domain {
					t.Errorf("domain %q, asked for %q", i.Domain, p.hints.Domain)
				}
				if i.Caps&p.hints.Caps != p.hints.Caps {
					t.Errorf("caps %v lack the asked %v", i.Caps, p.hints.Caps)
				}
				if i.MRMode&^SupportedMRModes != 0 || i.Mode&^SupportedModes != 0 {
					t.Errorf("mr_mode %v or mode %v beyond what the binding honours", i.MRMode, i.Mode)
				}
				if i.CQDataSize < 4 || i.MaxMsgSize == 0 || i.MRKeySize == 0 {
					t.Errorf("cq_data_size %d, max_msg_size %d, mr_key_size %d", i.CQDataSize, i.MaxMsgSize, i.MRKeySize)
				}
			}
		})
	}
}

func TestDiscoverUnknownProviderNamesIt(t *testing.T) {
	_, err := Discover(Hints{Provider: "no-such-provider", Caps: CapMsg})
	if err == nil {
		t.Fatal("discovery of a provider that does not exist succeeded")
	}
	t.Log(err)
	for _, w := range []string{"fi_getinfo", `"no-such-provider"`, "no provider matches"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not contain %s", err, w)
		}
	}
	var ce *CallError
	if !errors.As(err, &ce) || ce.Errno == 0 {
		t.Errorf("%v carries no libfabric errno", err)
	}
	if _, err := Open(Hints{Provider: "no-such-provider"}); err == nil || !strings.Contains(err.Error(), "no-such-provider") {
		t.Errorf("Open: %v", err)
	}
}

func TestSendRecvSeededPattern(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			checkNoLeaks(t)
			a, b := openSide(t, p.hints, false), openSide(t, p.hints, false)
			toB := a.insert(t, b)
			const msgs, size = 8, 64 << 10
			src, dst := mmapped(t, msgs*size), mmapped(t, msgs*size)
			fill(src, 1)
			smr := register(t, a.d, src, CapSend)
			rmr := register(t, b.d, dst, CapRecv)
			for i := range msgs {
				post(t, func() error { return b.ep.Recv(rmr.Local(uint64(i*size), size), uint64(100+i)) }, a, b)
			}
			for i := range msgs {
				post(t, func() error { return a.ep.Send(smr.Local(uint64(i*size), size), toB, uint64(i+1)) }, a, b)
			}
			recvd := collect(t, b, msgs, a)
			seen := map[uint64]bool{}
			for _, c := range recvd {
				if c.Err != nil || c.Flags&CapRecv == 0 || c.Len != size {
					t.Errorf("receive completion %+v", c)
				}
				seen[c.ID] = true
			}
			for i := range msgs {
				if !seen[uint64(100+i)] {
					t.Errorf("no completion for receive %d", 100+i)
				}
			}
			sent := collect(t, a, msgs, b)
			for _, c := range sent {
				if c.Err != nil || c.Flags&CapSend == 0 || c.ID < 1 || c.ID > msgs {
					t.Errorf("send completion %+v", c)
				}
			}
			if !bytes.Equal(src, dst) {
				t.Fatal("received bytes differ from the seeded pattern sent")
			}
		})
	}
}

func TestWriteDataFromSeveralEndpoints(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			checkNoLeaks(t)
			target := openSide(t, p.hints, false)
			const writers, writes, chunk = 3, 4, 16 << 10
			region := mmapped(t, writers*writes*chunk)
			rmr := register(t, target.d, region, CapRemoteWrite|CapRecv)
			if target.d.Info().Mode&ModeRxCQData != 0 {
				for i := range writers * writes {
					post(t, func() error { return target.ep.Recv(Local{MR: rmr, Addr: rmr.Addr()}, uint64(1000+i)) }, target)
				}
			}
			want := make([]byte, len(region))
			fill(want, 7)
			var ws []*side
			for w := range writers {
				s := openSide(t, p.hints, false)
				ws = append(ws, s)
				dest := s.insert(t, target)
				src := mmapped(t, writes*chunk)
				copy(src, want[w*writes*chunk:])
				smr := register(t, s.d, src, CapWrite)
				for k := range writes {
					off := uint64((w*writes + k) * chunk)
					r := Remote{Addr: rmr.RemoteAddr(off), Key: rmr.Key()}
					data := uint64(w)<<32 | uint64(k) | 1<<40
					post(t, func() error { return s.ep.WriteData(smr.Local(uint64(k*chunk), chunk), data, dest, r, uint64(k+1)) },
						append([]*side{target}, ws...)...)
				}
			}
			got := collect(t, target, writers*writes, ws...)
			seen := map[uint64]bool{}
			for _, c := range got {
				if c.Err != nil || !c.HasData || c.Flags&CapRemoteWrite == 0 {
					t.Errorf("target completion %+v", c)
				}
				seen[c.Data] = true
			}
			for w := range writers {
				for k := range writes {
					if d := uint64(w)<<32 | uint64(k) | 1<<40; !seen[d] {
						t.Errorf("no remote CQ data %#x at the target", d)
					}
				}
			}
			for _, s := range ws {
				for _, c := range collect(t, s, writes, target) {
					if c.Err != nil || c.Flags&CapWrite == 0 {
						t.Errorf("writer completion %+v", c)
					}
				}
			}
			if !bytes.Equal(region, want) {
				t.Fatal("the target region differs from the seeded pattern written")
			}
		})
	}
}

// A write the target rejects is only reported to the writer under FI_DELIVERY_COMPLETE:
// without it tcp;ofi_rxm and shm complete the write successfully and drop it at the target,
// and shm (libfabric 1.17) reports nothing at all even with it, so this runs on tcp.
func TestWriteWithBadKeyFailsNamingTheCall(t *testing.T) {
	for _, p := range providers {
		if !p.hints.DeliveryComplete {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			checkNoLeaks(t)
			target, w := openSide(t, p.hints, false), openSide(t, p.hints, false)
			dest := w.insert(t, target)
			region := mmapped(t, 4096)
			rmr := register(t, target.d, region, CapRemoteWrite|CapRecv)
			src := mmapped(t, 4096)
			fill(src, 3)
			smr := register(t, w.d, src, CapWrite)
			r := Remote{Addr: rmr.RemoteAddr(0), Key: rmr.Key() + 0x5a5a}
			g := newHangGuard()
			for {
				err := w.ep.WriteData(smr.Local(0, 4096), 9, dest, r, 77)
				if errors.Is(err, ErrAgain) {
					w.poll(t)
					target.pollAny()
					g.check(t, err.Error())
					continue
				}
				if err != nil {
					if !strings.Contains(err.Error(), "fi_writedata") {
						t.Errorf("refused post %q does not name fi_writedata", err)
					}
					return
				}
				break
			}
			c := collectAny(t, w, target)
			var ce *CompletionError
			if !errors.As(c.Err, &ce) || ce.ID != 77 {
				t.Fatalf("completion of a write with a bad key: %+v", c)
			}
			if ce.Errno == 0 || !strings.Contains(ce.Error(), "fi_writedata") || !strings.Contains(ce.Error(), "fi_cq_readerr") || ce.Text == "" {
				t.Errorf("error completion %q lacks errno, call or provider text", ce)
			}
			t.Log(ce)
			if region[0] != 0 || !bytes.Equal(region[:len(region)-1], region[1:]) {
				t.Error("a write with a bad key changed the target's memory")
			}
		})
	}
}

// collectAny returns s's first completion, reading target's CQ meanwhile (its errors, such
// as a rejected remote access, are expected here).
func collectAny(t *testing.T, s, target *side) Completion {
	t.Helper()
	g := newHangGuard()
	for len(s.got) == 0 {
		s.poll(t)
		target.pollAny()
		g.check(t, "a write with a bad key")
	}
	return s.got[0]
}

// pollAny reads s's CQ, keeping nothing: for a side whose completions, errors included,
// are not what the test checks.
func (s *side) pollAny() { _, _ = s.cq.Read(make([]Completion, 16)) }

func TestCloseIsIdempotentAndTheDomainClosesWhatItOwns(t *testing.T) {
	checkNoLeaks(t)
	before := Live()
	s := openSide(t, providers[0].hints, true)
	buf := mmapped(t, 4096)
	mr := register(t, s.d, buf, CapRecv|CapRemoteWrite)
	opened := Live()
	more := ObjectCounts{Fabrics: opened.Fabrics - before.Fabrics, Domains: opened.Domains - before.Domains,
		AVs: opened.AVs - before.AVs, CQs: opened.CQs - before.CQs, Endpoints: opened.Endpoints - before.Endpoints,
		MRs: opened.MRs - before.MRs}
	if want := (ObjectCounts{Fabrics: 1, Domains: 1, AVs: 1, CQs: 1, Endpoints: 1, MRs: 1}); more != want {
		t.Fatalf("%+v more objects open, want %+v", more, want)
	}
	if err := s.ep.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ep.Close(); err != nil {
		t.Fatalf("second endpoint Close: %v", err)
	}
	if err := s.d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := Live(); got != before {
		t.Fatalf("after the domain's Close %+v are open, before the test %+v", got, before)
	}
	for name, err := range map[string]error{"domain": s.d.Close(), "mr": mr.Close(), "cq": s.cq.Close(), "av": s.av.Close()} {
		if err != nil {
			t.Errorf("%s Close after the domain's: %v", name, err)
		}
	}
	if _, err := s.cq.Read(make([]Completion, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read of a closed CQ: %v", err)
	}
	if err := s.ep.Send(mr.Local(0, 1), 0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Send on a closed endpoint: %v", err)
	}
	if _, err := s.d.OpenAV(1); !errors.Is(err, ErrClosed) {
		t.Errorf("OpenAV on a closed domain: %v", err)
	}
}

func TestReadWaitSleepsUntilACompletion(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) { readWait(t, p.hints) })
	}
}

// readWait receives one message with ReadWait on a CQ with a wait object (every provider
// tested here has one).
func readWait(t *testing.T, h Hints) {
	checkNoLeaks(t)
	a, b := openSide(t, h, false), openSide(t, h, true)
	if ok, why := a.cq.CanWait(); ok || why == "" {
		t.Errorf("a CQ opened without a wait object: CanWait %v %q", ok, why)
	}
	if _, err := a.cq.ReadWait(make([]Completion, 1), time.Millisecond); !errors.Is(err, ErrNoWait) {
		t.Errorf("ReadWait without a wait object: %v", err)
	}
	if ok, why := b.cq.CanWait(); !ok {
		t.Fatalf("%s refused a wait object: %s", h.Provider, why)
	}
	dst, src := mmapped(t, 4096), mmapped(t, 4096)
	fill(src, 5)
	rmr, smr := register(t, b.d, dst, CapRecv), register(t, a.d, src, CapSend)
	toB := a.insert(t, b)
	post(t, func() error { return b.ep.Recv(rmr.Local(0, 4096), 42) }, a, b)
	post(t, func() error { return a.ep.Send(smr.Local(0, 4096), toB, 1) }, a, b)
	// The sender's side progresses on its own here only while polled: a goroutine polls it
	// until the receiver's ReadWait returns.
	done, sent := make(chan struct{}), make(chan Completion, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got := make([]Completion, 4)
		for {
			select {
			case <-done:
				return
			default:
				if n, _ := a.cq.Read(got); n > 0 {
					select {
					case sent <- got[0]:
					case <-done:
						return
					}
				}
			}
		}
	}()
	defer wg.Wait() // before the CQ is closed
	defer close(done)
	g := newHangGuard()
	out := make([]Completion, 1)
	for {
		n, err := b.cq.ReadWait(out, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		g.check(t, "ReadWait")
	}
	if out[0].ID != 42 || out[0].Err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("completion %+v; bytes equal %v", out[0], bytes.Equal(dst, src))
	}
	// The send completes too (with delivery complete, once b acknowledged it: b is read
	// meanwhile) before anything closes.
	for {
		select {
		case c := <-sent:
			if c.ID != 1 || c.Err != nil {
				t.Fatalf("send completion %+v", c)
			}
			return
		default:
			b.poll(t)
			g.check(t, "the send's completion")
		}
	}
}

// postAll posts ops with Post, polling every side while the provider answers FI_EAGAIN.
func postAll(t *testing.T, ep *Endpoint, ops []Op, sides ...*side) {
	t.Helper()
	g := newHangGuard()
	for len(ops) > 0 {
		n, err := ep.Post(ops)
		ops = ops[n:]
		if err != nil && !errors.Is(err, ErrAgain) {
			t.Fatal(err)
		}
		for _, s := range sides {
			s.poll(t)
		}
		g.check(t, fmt.Sprintf("%d operations not posted", len(ops)))
	}
}

func TestPostBatchesWithSelectiveCompletion(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			checkNoLeaks(t)
			target, w := openSide(t, p.hints, false), openSideWith(t, p.hints, false, true)
			dest := w.insert(t, target)
			const n, chunk = 6, 8 << 10
			region, src := mmapped(t, 2*n*chunk), mmapped(t, 2*n*chunk)
			fill(src, 11)
			rmr, smr := register(t, target.d, region, CapRecv|CapRemoteWrite), register(t, w.d, src, CapSend|CapWrite)
			var recvs, sends []Op
			for i := range n {
				recvs = append(recvs, Op{Kind: OpRecv, Local: rmr.Local(uint64(i*chunk), chunk), Peer: AddrUnspec, ID: uint64(100 + i)})
				sends = append(sends, Op{Kind: OpSend, Local: smr.Local(uint64(i*chunk), chunk), Peer: dest,
					Data: uint64(0x100 + i), HasData: true, ID: uint64(1 + i), Signaled: i == n-1})
			}
			for i := range n {
				if target.d.Info().Mode&ModeRxCQData != 0 {
					recvs = append(recvs, Op{Kind: OpRecv, Local: Local{Addr: rmr.Addr(), MR: rmr}, Peer: AddrUnspec, ID: uint64(200 + i)})
				}
				off := uint64((n + i) * chunk)
				sends = append(sends, Op{Kind: OpWrite, Local: smr.Local(off, chunk), Peer: dest,
					Remote: Remote{Addr: rmr.RemoteAddr(off), Key: rmr.Key()}, Data: uint64(0x200 + i), HasData: true,
					ID: uint64(1 + n + i), Signaled: i == n-1})
			}
			postAll(t, target.ep, recvs, target, w)
			postAll(t, w.ep, sends, target, w)
			seen := map[uint64]bool{}
			for _, c := range collect(t, target, 2*n, w) {
				if c.Err != nil || !c.HasData {
					t.Errorf("target completion %+v", c)
				}
				seen[c.Data] = true
			}
			for i := range n {
				if !seen[uint64(0x100+i)] || !seen[uint64(0x200+i)] {
					t.Errorf("remote CQ data %#x or %#x not seen at the target", 0x100+i, 0x200+i)
				}
			}
			// Only the two signalled operations complete at the writer.
			ids := map[uint64]bool{}
			for _, c := range collect(t, w, 2, target) {
				if c.Err != nil {
					t.Error(c.Err)
				}
				ids[c.ID] = true
			}
			if !ids[n] || !ids[2*n] {
				t.Errorf("writer completions %v, want only the signalled %d and %d", ids, n, 2*n)
			}
			if !bytes.Equal(region, src) {
				t.Fatal("the target's memory differs from the seeded pattern sent and written")
			}
		})
	}
}

func TestPostRefusesWhatItCannotPost(t *testing.T) {
	checkNoLeaks(t)
	s := openSide(t, providers[0].hints, false)
	buf := mmapped(t, 64)
	mr := register(t, s.d, buf, CapSend)
	if _, err := s.ep.Post([]Op{{Kind: 9, Local: mr.Local(0, 8)}}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("an unknown kind: %v", err)
	}
	outside := Local{Addr: mr.Addr() + 32, Len: 64, MR: mr}
	if _, err := s.ep.Post([]Op{{Kind: OpSend, Local: outside}}); err == nil || !strings.Contains(err.Error(), "fi_sendmsg") {
		t.Errorf("memory outside its region: %v", err)
	}
	if err := s.ep.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ep.Post([]Op{{Kind: OpSend}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Post on a closed endpoint: %v", err)
	}
}

// A CQ opened with WaitFD has a file descriptor that polls readable once a completion may
// be there (after TryWait let the caller block); shm has none and says so.
func TestWaitFDWakesOnACompletion(t *testing.T) {
	checkNoLeaks(t)
	h := providers[0].hints
	a, b := openSide(t, h, false), openSide(t, h, false)
	cq, err := b.d.OpenCQ(CQConfig{Size: 64, WaitFD: true})
	if err != nil {
		t.Fatal(err)
	}
	fd, ok := cq.WaitFD()
	if !ok || fd < 0 {
		t.Fatalf("tcp;ofi_rxm CQ without a wait fd: %d %v", fd, ok)
	}
	ep, err := b.d.OpenEndpoint(EndpointConfig{AV: b.av, TxCQ: cq, RxCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	name, err := ep.Name()
	if err != nil {
		t.Fatal(err)
	}
	rbuf := mmapped(t, 4096)
	rmr := register(t, b.d, rbuf, CapRecv)
	post(t, func() error { return ep.Recv(rmr.Local(0, 4096), 9) }, b)
	if err := b.d.TryWait([]*CQ{cq}); err != nil && !errors.Is(err, ErrAgain) {
		t.Fatal(err)
	}
	peer, err := a.av.Insert(name)
	if err != nil {
		t.Fatal(err)
	}
	sbuf := mmapped(t, 4096)
	smr := register(t, a.d, sbuf, CapSend)
	var got []Completion
	readCQ := func() {
		buf := make([]Completion, 4)
		n, err := cq.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	g := newHangGuard()
	for err := a.ep.Send(smr.Local(0, 100), peer, 1); err != nil; err = a.ep.Send(smr.Local(0, 100), peer, 1) {
		if !errors.Is(err, ErrAgain) {
			t.Fatal(err)
		}
		a.poll(t)
		readCQ()
		g.check(t, err.Error())
	}
	for len(got) == 0 {
		a.poll(t)
		if b.d.TryWait([]*CQ{cq}) == nil { // nothing ready: block on the fd (1 ms at a time, for the sender's progress)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			_, _ = unix.Poll(fds, 1)
		}
		readCQ()
		g.check(t, "the receive's completion")
	}
	if got[0].ID != 9 || got[0].Len != 100 || got[0].Err != nil {
		t.Fatalf("completion %+v", got[0])
	}
	shm, err := Open(providers[2].hints)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shm.Close() }()
	scq, err := shm.OpenCQ(CQConfig{WaitFD: true})
	if err != nil {
		t.Fatal(err)
	}
	if fd, ok := scq.WaitFD(); ok {
		t.Logf("shm offers a wait fd %d", fd)
	}
	if err := shm.TryWait(nil); err == nil {
		t.Error("TryWait over no CQ accepted")
	}
}

// The binding's libfabric environment defaults are in place once libfabric has initialised
// (FI_UNIVERSE_SIZE: see EnvDefaults), unless the environment set them first.
func TestEnvDefaultsSetWhenLibfabricInitialises(t *testing.T) {
	if _, err := Discover(providers[0].hints); err != nil {
		t.Fatal(err)
	}
	for _, e := range EnvDefaults {
		if v, ok := os.LookupEnv(e.Name); !ok || v == "" {
			t.Errorf("%s unset after Discover, want %s (%s) or the environment's", e.Name, e.Value, e.Why)
		}
	}
}
