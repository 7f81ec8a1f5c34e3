package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// keyValues parses the "key=value" words of a line into numbers; words without "=" or
// with a value that is not a number are left out.
func keyValues(line string) map[string]float64 {
	kv := map[string]float64{}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			kv[k] = f
		}
	}
	return kv
}

// sent is what `ringcap send --protocol spead` reports on its summary line.
type sent struct {
	packets, payloadBytes float64 // data packets and their payload
	stopHeaps             float64 // stream-stop heaps sent after the data (packets of their own)
	seconds               float64
}

// rate is the payload rate the sender reached, bytes/s.
func (s sent) rate() float64 {
	if s.seconds <= 0 {
		return 0
	}
	return s.payloadBytes / s.seconds
}

// parseSent finds the sender's summary line ("send: bytes=… packets=… payload_bytes=…
// stop_heaps=… seconds=… complete=true") in its output.
func parseSent(out string) (sent, error) {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "send: ")
		if !ok {
			continue
		}
		if !strings.Contains(rest, "complete=true") {
			return sent{}, fmt.Errorf("the sender did not complete: %s", line)
		}
		kv := keyValues(rest)
		s := sent{packets: kv["packets"], payloadBytes: kv["payload_bytes"], stopHeaps: kv["stop_heaps"], seconds: kv["seconds"]}
		if s.packets == 0 || s.seconds == 0 {
			return sent{}, fmt.Errorf("the sender's summary has no packets or seconds: %s", line)
		}
		return s, nil
	}
	return sent{}, fmt.Errorf("no summary line (send: …) in the sender's output: %q", out)
}

// received is what a receiver counted: packets handed on, packets written (ringcap: into
// the ring; the floor: the same), and the kernel's drops.
type received struct {
	packets, written, drops float64
}

// parseFloor reads the floor's last line: "packets=N bytes=B drops=D batches=K cpu_ns=C".
// The floor tells no data packet from a stream-stop heap: written counts both.
func parseFloor(out string) (received, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	kv := keyValues(last)
	p, okP := kv["packets"]
	d, okD := kv["drops"]
	if !okP || !okD {
		return received{}, fmt.Errorf("the floor's last line has no packets= and drops=: %q", last)
	}
	return received{packets: p, written: p, drops: d}, nil
}

// minus is r less the counts of an earlier moment.
func (r received) minus(o received) received {
	return received{packets: r.packets - o.packets, written: r.written - o.written, drops: r.drops - o.drops}
}

// lossFree reports whether r holds every packet of s and the kernel dropped none.
func (r received) lossFree(s sent) bool {
	return r.drops == 0 && r.written == s.packets
}

// parseSchedstat returns the first field of a /proc/PID/task/TID/schedstat file: the
// thread's time on a CPU, in ns.
func parseSchedstat(text string) (int64, error) {
	f := strings.Fields(text)
	if len(f) == 0 {
		return 0, fmt.Errorf("schedstat %q: empty", text)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat %q: %w", text, err)
	}
	return n, nil
}

// cpuNanos is process pid's CPU time so far (user and system, every thread alive), in ns,
// from /proc/PID/task/*/schedstat: finer than /proc/PID/stat's clock ticks.
func cpuNanos(pid int) (int64, error) {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		return 0, fmt.Errorf("read the CPU time of process %d: no /proc/%d/task/*/schedstat", pid, pid)
	}
	var sum int64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		n, err := parseSchedstat(string(b))
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// udpQueue is what /proc/net/udp says of the socket bound to a port: the bytes queued for
// the receiver to read and the datagrams the kernel dropped.
type udpQueue struct {
	rxQueue, drops uint64
}

// parseUDPTable finds the socket bound to port in the text of /proc/net/udp ("sl
// local_address rem_address st tx_queue:rx_queue … drops", addresses and queues in hex).
func parseUDPTable(text string, port int) (udpQueue, bool) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 13 {
			continue
		}
		_, p, ok := strings.Cut(f[1], ":")
		if n, err := strconv.ParseUint(p, 16, 16); !ok || err != nil || int(n) != port {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		q, err1 := strconv.ParseUint(rx, 16, 64)
		d, err2 := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err1 != nil || err2 != nil {
			return udpQueue{}, false
		}
		return udpQueue{rxQueue: q, drops: d}, true
	}
	return udpQueue{}, false
}

// udpQueueOf reads /proc/net/udp for the socket bound to port.
func udpQueueOf(port int) (udpQueue, bool) {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return udpQueue{}, false
	}
	return parseUDPTable(string(b), port)
}
