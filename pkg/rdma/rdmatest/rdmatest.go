package rdmatest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CopyDir copies the tree at src (files, directories and symlinks, which are copied
// as links) into a new temporary directory and returns its path.
func CopyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
	})
	if err != nil {
		tb.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// WriteFile writes an attribute (with a trailing newline, as sysfs prints it),
// creating parent directories.
func WriteFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Synthetic writes a tree with n Soft-RoCE-like devices synth0..synth<n-1> under
// dir/sys and dir/dev: each has one ACTIVE Ethernet port on netdev veth<i> (MTU
// 9000), a GID table of gidLen entries of which two are populated (an IPv6 link-local
// GID at 0 and the IPv4-mapped GID of 198.18.<i/256>.<i%256> at 1, both RoCE v2), and
// /dev/infiniband/uverbs<i>. It returns the sysfs and /dev roots.
func Synthetic(dir string, n, gidLen int) (sys, dev string, err error) {
	sys, dev = filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
	w := func(path, content string) {
		if err != nil {
			return
		}
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, []byte(content+"\n"), 0o644)
		}
	}
	zero := "0000:0000:0000:0000:0000:0000:0000:0000"
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("synth%d", i)
		nd := fmt.Sprintf("veth%d", i)
		real := filepath.Join(sys, "devices/virtual/infiniband", name)
		w(filepath.Join(real, "node_guid"), fmt.Sprintf("0200:00ff:fe00:%04x", i))
		w(filepath.Join(real, "node_type"), "1: CA")
		w(filepath.Join(real, "fw_ver"), "0.0.0")
		w(filepath.Join(real, "parent"), nd)
		p := filepath.Join(real, "ports/1")
		w(filepath.Join(p, "state"), "4: ACTIVE")
		w(filepath.Join(p, "phys_state"), "5: LinkUp")
		w(filepath.Join(p, "link_layer"), "Ethernet")
		w(filepath.Join(p, "rate"), "10 Gb/sec (1X QDR)")
		for g := 0; g < gidLen; g++ {
			v := zero
			switch g {
			case 0:
				v = fmt.Sprintf("fe80:0000:0000:0000:0000:00ff:fe00:%04x", i)
			case 1:
				v = fmt.Sprintf("0000:0000:0000:0000:0000:ffff:c612:%02x%02x", i/256, i%256)
			}
			w(filepath.Join(p, "gids", fmt.Sprint(g)), v)
			if v != zero {
				w(filepath.Join(p, "gid_attrs/types", fmt.Sprint(g)), "RoCE v2")
				w(filepath.Join(p, "gid_attrs/ndevs", fmt.Sprint(g)), nd)
			}
		}
		w(filepath.Join(sys, "class/net", nd, "mtu"), "9000")
		w(filepath.Join(sys, "class/infiniband_verbs", fmt.Sprintf("uverbs%d", i), "ibdev"), name)
		w(filepath.Join(dev, "infiniband", fmt.Sprintf("uverbs%d", i)), "")
		if err != nil {
			return "", "", fmt.Errorf("write synthetic device %s: %w", name, err)
		}
		link := filepath.Join(sys, "class/infiniband", name)
		if err = os.MkdirAll(filepath.Dir(link), 0o755); err == nil {
			err = os.Symlink(filepath.Join("../../devices/virtual/infiniband", name), link)
		}
		if err != nil {
			return "", "", fmt.Errorf("link synthetic device %s: %w", name, err)
		}
	}
	w(filepath.Join(dev, "infiniband/rdma_cm"), "")
	return sys, dev, err
}

// SetPortState writes a port's state and physical state in a tree made by Synthetic
// or copied from testdata ("ACTIVE" -> "4: ACTIVE" / "5: LinkUp", "DOWN" -> "1: DOWN" /
// "3: Disabled").
func SetPortState(tb testing.TB, sys, dev string, port int, state string) {
	tb.Helper()
	p := filepath.Join(sys, "class/infiniband", dev, "ports", fmt.Sprint(port))
	switch strings.ToUpper(state) {
	case "ACTIVE":
		WriteFile(tb, filepath.Join(p, "state"), "4: ACTIVE")
		WriteFile(tb, filepath.Join(p, "phys_state"), "5: LinkUp")
	case "DOWN":
		WriteFile(tb, filepath.Join(p, "state"), "1: DOWN")
		WriteFile(tb, filepath.Join(p, "phys_state"), "3: Disabled")
	default:
		tb.Fatalf("unknown port state %q", state)
	}
}

// ThreadCPUSets returns the CPU list (Cpus_allowed_list) each thread of this process may
// run on, by the path of its /proc/self/task/TID/status file.
func ThreadCPUSets(tb testing.TB) map[string]string {
	tb.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[f] = strings.TrimSpace(v)
			}
		}
	}
	return out
}
