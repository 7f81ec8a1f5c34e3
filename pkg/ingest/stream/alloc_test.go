package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// drain reads and clears every block of h until ctx ends or the data end.
func drain(ctx context.Context, h *dada.HDU) error {
	_, _, err := ringtest.ReadObservation(ctx, h)
	return err
}

// allocsPerPacket runs the packets next gives through a pipeline of cfg on
// a real ring that a reader drains, and returns the allocations per Handle
// after the first packets (the header, the assembler's range lists).
func allocsPerPacket(t *testing.T, cfg Config, next func(i int) []byte) float64 {
	t.Helper()
	h := ringtest.New(t, testKeys, 4, 1<<16)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	done := make(chan error, 1)
	go func() { done <- drain(ctx, h) }()
	cfg.HeaderBytes = h.Header.BufSize()
	p, err := New(ctx, cfg, assemble.ForDada(w, 2))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	handle := func() {
		if err := p.Handle(next(i)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 64 {
		handle()
	}
	allocs := testing.AllocsPerRun(2000, handle)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, p.Snapshot())
	return allocs
}

// Handle allocates nothing per packet, for placed packets and rejected ones
// alike (decoding, placing, counting and copying into the ring).
func TestHandleAllocatesNothing(t *testing.T) {
	const n = 4096
	bad := []byte("not a packet")
	var sp [][]byte
	for i := range n {
		if i%16 == 15 {
			sp = append(sp, bad)
			continue
		}
		g := i % 2
		sp = append(sp, ingesttest.SPEADHeap(48, uint64(i), 1024, 0, make([]byte, 1024),
			ingesttest.Imm(tsID, uint64(i/2)*step), ingesttest.Imm(chanID, uint64(g*512))))
	}
	scfg := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}}
	if a := allocsPerPacket(t, scfg, func(i int) []byte { return sp[i] }); a != 0 {
		t.Errorf("SPEAD: %v allocations per packet", a)
	}
	var vf [][]byte
	for i := range n {
		h := vdif.Header{Seconds: uint32(i / (2 * fps)), FrameNumber: uint32(i / 2 % fps), ThreadID: threadIDs[i%2], Invalid: i%16 == 15}
		vf = append(vf, ingesttest.VDIF(h, make([]byte, 1024)))
	}
	vcfg := Config{Protocol: VDIF, VDIF: vdif.Rule{FramesPerSecond: fps, ThreadIDs: threadIDs}}
	if a := allocsPerPacket(t, vcfg, func(i int) []byte { return vf[i] }); a != 0 {
		t.Errorf("VDIF: %v allocations per packet", a)
	}
}

// A configuration that cannot run a pipeline is refused, saying why.
func TestConfigValidate(t *testing.T) {
	ok := SPEADTime{SyncTime: 1, SampleRate: 1}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Protocol: "rdma", HeaderBytes: 4096}, `protocol "rdma"`},
		{Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: ok}, "header block of 0 bytes"},
		{Config{Protocol: SPEAD, SPEADTime: ok, HeaderBytes: 4096}, "SPEAD rule: the rule names no timestamp item"},
		{Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SampleRate: 1}, HeaderBytes: 4096}, "SPEAD sync time"},
		{Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTimeID: 0x1027}, HeaderBytes: 4096}, "SPEAD sample rate"},
		{Config{Protocol: VDIF, HeaderBytes: 4096}, "VDIF rule: frames per second is 0"},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
		if _, err := New(context.Background(), c.cfg, assemble.Config{}); err == nil {
			t.Errorf("%+v: New accepted it", c.cfg)
		}
	}
	if err := (Config{Protocol: VDIF, VDIF: vdif.Rule{FramesPerSecond: 1, Threads: 1}, HeaderBytes: 4096}).Validate(); err != nil {
		t.Errorf("a valid VDIF configuration: %v", err)
	}
}
