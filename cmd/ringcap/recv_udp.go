package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ringcap/ringcap/internal/affinity"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// udpConfig is the sockets the flags ask for.
func (p *packetFlags) udpConfig() (udp.Config, error) {
	if p.ports == "" {
		return udp.Config{}, fmt.Errorf("--protocol %s needs --udp-ports", p.protocol)
	}
	c := udp.Config{SocketsPerPort: p.sockets, Interface: p.iface}
	for _, s := range strings.Split(p.ports, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
		if err != nil {
			return c, fmt.Errorf("--udp-ports %q: %q is not a port number (0..65535)", p.ports, s)
		}
		c.Ports = append(c.Ports, uint16(n))
	}
	if p.sockets < 1 {
		return c, fmt.Errorf("--udp-sockets %d: want at least 1", p.sockets)
	}
	if p.buffer > 1<<30 {
		return c, fmt.Errorf("--udp-buffer %d: the kernel's largest socket buffer is 1 GiB", p.buffer)
	}
	c.RecvBufferBytes = int(p.buffer)
	var err error
	if c.CPUs, err = receiveCPUs(p.cpus); err != nil {
		return c, err
	}
	switch {
	case p.gather < 0 || p.gather > time.Second:
		return c, fmt.Errorf("--udp-gather %s: want 0 (off) to 1s", p.gather)
	case p.gather == 0:
		c.Gather = -1
	default:
		c.Gather = p.gather
	}
	if p.address != "" {
		if c.Address, err = netip.ParseAddr(p.address); err != nil {
			return c, fmt.Errorf("--udp-address %q: %w", p.address, err)
		}
	}
	if c.Groups, err = parseGroups(p.multicast); err != nil {
		return c, err
	}
	if p.iface != "" && len(c.Groups) == 0 {
		return c, fmt.Errorf("--multicast-interface %s: no --multicast groups to join", p.iface)
	}
	return c, nil
}

// receiveCPUs parses --udp-cpus: none, auto or a list of CPUs this process may run on.
func receiveCPUs(s string) ([]int, error) {
	switch s {
	case "":
		return nil, nil
	case "auto":
		cpus, err := affinity.Allowed()
		if err == nil && len(cpus) == 0 {
			err = errors.New("no CPU affinity on this system")
		}
		if err != nil {
			return nil, fmt.Errorf("--udp-cpus auto: %w", err)
		}
		return cpus, nil
	}
	cpus, err := affinity.ParseList(s)
	if err != nil {
		return nil, fmt.Errorf("--udp-cpus: want auto or a %w", err)
	}
	if err := affinity.CheckAllowed(cpus); err != nil {
		return nil, fmt.Errorf("--udp-cpus %s: %w", s, err)
	}
	return cpus, nil
}

// parseGroups parses --multicast: IPv4 multicast addresses.
func parseGroups(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	var gs []netip.Addr
	for _, g := range strings.Split(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(g))
		if err != nil || !a.Is4() || !a.IsMulticast() {
			return nil, fmt.Errorf("--multicast %q: %q is not an IPv4 multicast address", s, g)
		}
		gs = append(gs, a)
	}
	return gs, nil
}

// parseID parses an item ID: 0x hexadecimal or decimal.
func parseID(flag, s string, bits int) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	base, t := 10, s
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		base, t = 16, h
	}
	n, err := strconv.ParseUint(t, base, bits)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: want a %d-bit number, decimal or 0x hexadecimal", flag, s, bits)
	}
	return n, nil
}

// speadFlags are the SPEAD placement rule and time flags.
type speadFlags struct {
	tsID, chanID, syncID, rateID string
	tsStep, heapBytes            uint64
	channels                     string
	sync, rate, start            uint64
}

func (f *speadFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.tsID, "spead-timestamp-id", "", "SPEAD: the immediate item whose value orders the heaps (e.g. 0x1600, the ADC sample count; 0x1 places by heap counter)")
	fs.Uint64Var(&f.tsStep, "spead-timestamp-step", 0, "SPEAD: the timestamp increment between consecutive heaps of one channel group")
	fs.StringVar(&f.chanID, "spead-channel-id", "", "SPEAD: the immediate item naming a heap's channel group (e.g. 0x4103; default: one group)")
	fs.StringVar(&f.channels, "spead-channels", "", "SPEAD: with --spead-channel-id, its values FIRST:STEP:COUNT (e.g. 0:256:16)")
	fs.Var((*byteSize)(&f.heapBytes), "spead-heap-bytes", "SPEAD: bytes per heap (default: the first packet's heap size)")
	fs.Uint64Var(&f.sync, "spead-sync-time", 0, "SPEAD: Unix seconds of timestamp 0 (or --spead-sync-time-id)")
	fs.StringVar(&f.syncID, "spead-sync-time-id", "", "SPEAD: the immediate item holding the sync time")
	fs.Uint64Var(&f.rate, "spead-sample-rate", 0, "SPEAD: timestamp units per second, the ADC sample rate in Hz (or --spead-sample-rate-id)")
	fs.StringVar(&f.rateID, "spead-sample-rate-id", "", "SPEAD: the immediate item holding the sample rate")
	fs.Uint64Var(&f.start, "spead-start-timestamp", 0, "SPEAD: the observation's first timestamp; earlier heaps are counted, not written (0: the first packet's)")
}

// config is the SPEAD stream the flags describe.
func (f *speadFlags) config() (stream.Config, error) {
	c := stream.Config{Protocol: stream.SPEAD, SPEAD: spead.Rule{TimestampStep: f.tsStep, HeapSize: f.heapBytes},
		SPEADTime: stream.SPEADTime{SyncTime: f.sync, SampleRate: f.rate}, Start: stream.Start{At: f.start != 0, Timestamp: f.start}}
	ids := []struct {
		flag, val string
		dst       *uint32
	}{{"spead-timestamp-id", f.tsID, &c.SPEAD.TimestampID}, {"spead-channel-id", f.chanID, &c.SPEAD.ChannelID},
		{"spead-sync-time-id", f.syncID, &c.SPEADTime.SyncTimeID}, {"spead-sample-rate-id", f.rateID, &c.SPEADTime.SampleRateID}}
	for _, id := range ids {
		n, err := parseID(id.flag, id.val, 32)
		if err != nil {
			return c, err
		}
		*id.dst = uint32(n)
	}
	if err := f.checkTime(); err != nil {
		return c, err
	}
	var err error
	if c.SPEAD.Channels, err = f.channelRange(); err != nil {
		return c, err
	}
	if err := c.SPEAD.Validate(); err != nil {
		return c, fmt.Errorf("SPEAD placement (--spead-*): %w", err)
	}
	return c, nil
}

// checkTime refuses a time given twice or not at all, naming the flags.
func (f *speadFlags) checkTime() error {
	for _, t := range []struct {
		name   string
		v      uint64
		id     string
		flag   string
		flagID string
	}{{"sync time", f.sync, f.syncID, "--spead-sync-time", "--spead-sync-time-id"},
		{"sample rate", f.rate, f.rateID, "--spead-sample-rate", "--spead-sample-rate-id"}} {
		switch {
		case t.v != 0 && t.id != "":
			return fmt.Errorf("SPEAD %s: give %s or %s, not both", t.name, t.flag, t.flagID)
		case t.v == 0 && t.id == "":
			return fmt.Errorf("SPEAD %s: give %s or %s", t.name, t.flag, t.flagID)
		}
	}
	if f.tsID == "" || f.tsStep == 0 {
		return fmt.Errorf("SPEAD placement: give --spead-timestamp-id and --spead-timestamp-step")
	}
	return nil
}

// channelRange parses --spead-channels FIRST:STEP:COUNT.
func (f *speadFlags) channelRange() (spead.Range, error) {
	if f.channels == "" {
		if f.chanID != "" {
			return spead.Range{}, fmt.Errorf("--spead-channel-id %s needs --spead-channels FIRST:STEP:COUNT", f.chanID)
		}
		return spead.Range{}, nil
	}
	if f.chanID == "" {
		return spead.Range{}, fmt.Errorf("--spead-channels %s needs --spead-channel-id", f.channels)
	}
	parts := strings.Split(f.channels, ":")
	var v [3]uint64
	if len(parts) != 3 {
		return spead.Range{}, fmt.Errorf("--spead-channels %q: want FIRST:STEP:COUNT, e.g. 0:256:16", f.channels)
	}
	for i, s := range parts {
		n, err := parseID("spead-channels", s, 64)
		if err != nil {
			return spead.Range{}, fmt.Errorf("--spead-channels %q: want FIRST:STEP:COUNT, e.g. 0:256:16: %w", f.channels, err)
		}
		v[i] = n
	}
	if v[2] == 0 {
		return spead.Range{}, fmt.Errorf("--spead-channels %q: COUNT is 0", f.channels)
	}
	return spead.Range{First: v[0], Step: v[1], Count: v[2]}, nil
}

// vdifFlags are the VDIF placement rule and start flags.
type vdifFlags struct {
	fps, payload uint32
	threads      string
	start        string
}

func (f *vdifFlags) add(fs *pflag.FlagSet) {
	fs.Uint32Var(&f.fps, "vdif-frames-per-second", 0, "VDIF: frames per second of each thread (required)")
	fs.StringVar(&f.threads, "vdif-threads", "", "VDIF: thread IDs in the order their frames are interleaved, e.g. 0,1,2,3 (default: one thread, the first that appears)")
	fs.Uint32Var(&f.payload, "vdif-payload-bytes", 0, "VDIF: each frame's data array in bytes (default: the first frame's)")
	fs.StringVar(&f.start, "vdif-start", "", "VDIF: the observation's first second, RFC 3339 (e.g. 2026-11-29T03:00:00Z); earlier frames are counted, not written (default: the first frame's second)")
}

// config is the VDIF stream the flags describe.
func (f *vdifFlags) config() (stream.Config, error) {
	c := stream.Config{Protocol: stream.VDIF, VDIF: vdif.Rule{FramesPerSecond: f.fps, PayloadBytes: f.payload}}
	if f.fps == 0 {
		return c, fmt.Errorf("--protocol vdif needs --vdif-frames-per-second")
	}
	ids, err := f.threadIDs()
	if err != nil {
		return c, err
	}
	c.VDIF.ThreadIDs = ids
	if len(ids) == 0 {
		c.VDIF.Threads = 1
	}
	if f.start != "" {
		t, err := time.Parse(time.RFC3339, f.start)
		if err != nil {
			return c, fmt.Errorf("--vdif-start %q: want RFC 3339, e.g. 2026-11-29T03:00:00Z", f.start)
		}
		c.Start = stream.Start{At: true, Time: t}
	}
	if err := c.VDIF.Validate(); err != nil {
		return c, fmt.Errorf("VDIF placement (--vdif-*): %w", err)
	}
	return c, nil
}

// threadIDs parses --vdif-threads, refusing a thread given twice.
func (f *vdifFlags) threadIDs() ([]uint16, error) {
	if f.threads == "" {
		return nil, nil
	}
	var ids []uint16
	seen := map[uint64]bool{}
	for _, s := range strings.Split(f.threads, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
		if err != nil || n >= vdif.MaxThreads {
			return nil, fmt.Errorf("--vdif-threads %q: %q is not a thread ID (0..%d)", f.threads, s, vdif.MaxThreads-1)
		}
		if seen[n] {
			return nil, fmt.Errorf("--vdif-threads %q: thread %d given twice", f.threads, n)
		}
		seen[n] = true
		ids = append(ids, uint16(n))
	}
	return ids, nil
}
