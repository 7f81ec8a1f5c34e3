package rdma

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Counter is one of a port's link counters as sysfs gives it: the InfiniBand port
// counters (ports/N/counters: port_xmit_data, port_rcv_errors, ...) and the driver's
// hardware counters (ports/N/hw_counters: on rxe and mlx5 alike duplicate_request,
// out_of_sequence or out_of_seq_request, rnr_nak_retry_err, packet_seq_err, ...).
type Counter struct {
	Name   string // the file's name
	Source string // CounterSourcePort or CounterSourceHW
	Value  uint64
}

// The directories a port's counters come from.
const (
	CounterSourcePort = "counters"
	CounterSourceHW   = "hw_counters"
)

// PortCounters reads every counter of port of dev under r.Sys, port counters first, each
// directory by name. A missing directory has no counters (rxe has no port counters); a
// file that cannot be read or holds no number (mlx5 refuses some reads with EINVAL) is
// left out and named in skipped. The counters of a device that does not exist are an error.
func PortCounters(r Roots, dev string, port int) (cs []Counter, skipped []string, err error) {
	base := filepath.Join(r.Sys, "class/infiniband", dev, "ports", strconv.Itoa(port))
	if _, err := os.Stat(base); err != nil {
		return nil, nil, fmt.Errorf("read counters of %s port %d: %w", dev, port, err)
	}
	for _, src := range []string{CounterSourcePort, CounterSourceHW} {
		c, s, err := readCounterDir(filepath.Join(base, src), src)
		if err != nil {
			return nil, nil, fmt.Errorf("read counters of %s port %d: %w", dev, port, err)
		}
		cs, skipped = append(cs, c...), append(skipped, s...)
	}
	return cs, skipped, nil
}

// readCounterDir reads the counter files of one directory (none when it is missing).
func readCounterDir(dir, src string) (cs []Counter, skipped []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if e.IsDir() { // hw_counters/lifespan is a file; nothing nests
			continue
		}
		v, err := readCounter(filepath.Join(dir, e.Name()))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s/%s: %v", src, e.Name(), err))
			continue
		}
		cs = append(cs, Counter{Name: e.Name(), Source: src, Value: v})
	}
	return cs, skipped, nil
}

// readCounter reads one counter file: a decimal number.
func readCounter(path string) (uint64, error) {
	s, err := readAttr(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a counter: %q", s)
	}
	return v, nil
}
