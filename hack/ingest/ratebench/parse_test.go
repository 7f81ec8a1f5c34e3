package main

import "testing"

func TestParseSent(t *testing.T) {
	t.Parallel()
	out := "some log line\nsend: bytes=536870912 packets=65536 payload_bytes=536870912 dropped_packets=0 dropped_bytes=0 stop_heaps=1 seconds=2.563 gbps=1.676 protocol=spead complete=true\n"
	s, err := parseSent(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.packets != 65536 || s.payloadBytes != 536870912 || s.stopHeaps != 1 || s.seconds != 2.563 {
		t.Errorf("parsed %+v", s)
	}
	if r := s.rate() / mib; r < 199.7 || r > 199.8 {
		t.Errorf("rate %.2f MiB/s, want 199.77", r)
	}
	for _, bad := range []string{
		"",
		"send: bytes=1 packets=1 payload_bytes=1 seconds=1 complete=false",
		"send: bytes=1 payload_bytes=1 complete=true",
	} {
		if _, err := parseSent(bad); err == nil {
			t.Errorf("parseSent(%q): no error", bad)
		}
	}
}

func TestParseFloorAndLoss(t *testing.T) {
	t.Parallel()
	r, err := parseFloor("ready port=1 rcvbuf=4194304\npackets=114072 bytes=939953280 drops=17000 batches=12906 cpu_ns=549664000\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.packets != 114072 || r.written != 114072 || r.drops != 17000 {
		t.Errorf("parsed %+v", r)
	}
	if r.lossFree(sent{packets: 114072}) {
		t.Error("kernel drops counted loss-free")
	}
	r.drops = 0
	if !r.lossFree(sent{packets: 114072}) || r.lossFree(sent{packets: 114073}) {
		t.Error("loss-free is: no drop and every packet sent written")
	}
	if _, err := parseFloor("ready port=1 rcvbuf=2\n"); err == nil {
		t.Error("a floor output without counts parsed")
	}
}

func TestParseSchedstat(t *testing.T) {
	t.Parallel()
	n, err := parseSchedstat("3993627 18853693 2\n")
	if err != nil || n != 3993627 {
		t.Errorf("parseSchedstat = %d, %v; want 3993627", n, err)
	}
	for _, bad := range []string{"", "x 1 2"} {
		if _, err := parseSchedstat(bad); err == nil {
			t.Errorf("parseSchedstat(%q): no error", bad)
		}
	}
}

func TestParseUDPTable(t *testing.T) {
	t.Parallel()
	table := "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		" 9051: 0100007F:4395 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2438699 2 00000000233043da 0\n" +
		" 9052: 0100007F:4396 00000000:0000 07 00000000:00012000 00:00000000 00000000     0        0 2438700 2 00000000233043db 17\n"
	q, ok := parseUDPTable(table, 0x4396)
	if !ok || q.rxQueue != 0x12000 || q.drops != 17 {
		t.Errorf("port 0x4396: %+v, %v; want 73728 bytes queued, 17 drops", q, ok)
	}
	if q, ok := parseUDPTable(table, 0x4395); !ok || q.rxQueue != 0 || q.drops != 0 {
		t.Errorf("port 0x4395: %+v, %v; want nothing queued", q, ok)
	}
	if _, ok := parseUDPTable(table, 1); ok {
		t.Error("found a socket on port 1")
	}
}
