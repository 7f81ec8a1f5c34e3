package dada

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/pattern"
)

// Multi-process tests re-execute the test binary with RINGCAP_TEST_ROLE set; TestMain
// then runs the role instead of the tests. A child prints "READY ..." on stdout when it
// has reached the state the parent waits for, then sleeps until killed.

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// runChildRole runs one role of a multi-process test in a re-executed test binary.
func runChildRole(role string) int {
	key, err := ParseKey(os.Getenv("RINGCAP_TEST_KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	h, err := Connect(key, ConnectOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx := context.Background()
	seed := uint64(envInt("RINGCAP_TEST_SEED"))
	switch role {
	case "writer-hang":
		// Write a header and RINGCAP_TEST_BLOCKS full pattern blocks, open one more,
		// fill half of it, and hang.
		w, err := h.LockWrite(ctx, WriterOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		if err := w.WriteHeader([]byte("HDR_SIZE 4096\nOBS_OFFSET 0\n")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		bs := h.Data.BufSize()
		for i := 0; i < envInt("RINGCAP_TEST_BLOCKS"); i++ {
			b, err := w.OpenBlock(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			pattern.Fill(b.Data, seed, uint64(i*bs))
			if err := w.MarkFilled(bs); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
		}
		b, err := w.OpenBlock(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		clear(b.Data[:bs/2])
		fmt.Printf("READY seq=%d\n", b.Seq)
	case "reader-hang":
		// Read the header and RINGCAP_TEST_BLOCKS blocks, take one more and hang on it.
		r, err := h.LockRead(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		if _, err := r.ReadHeader(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		for i := 0; i < envInt("RINGCAP_TEST_BLOCKS"); i++ {
			if _, err := r.NextBlock(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
			if err := r.MarkCleared(); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 2
			}
		}
		b, err := r.NextBlock(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Printf("READY seq=%d slot=%d\n", b.Seq, r.Slot())
	case "reader-header-hang":
		// Read the next header and hang before its data.
		r, err := h.LockRead(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		if _, err := r.ReadHeader(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Printf("READY slot=%d\n", r.Slot())
	case "writer":
		// Write RINGCAP_TEST_OBS observations of RINGCAP_TEST_BYTES pattern bytes, then exit.
		w, err := h.LockWrite(ctx, WriterOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		for i := 0; i < envInt("RINGCAP_TEST_OBS"); i++ {
			if err := writeObs(w, seed+uint64(i), envInt("RINGCAP_TEST_BYTES"), 100000); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
		}
		if err := w.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		fmt.Println("READY")
		return 0
	case "reader-verify":
		// Read one observation, verify the pattern and print its size.
		r, err := h.LockRead(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		total := 0
		for i := 0; i < max(1, envInt("RINGCAP_TEST_OBS")); i++ {
			n, err := readObs(ctx, r, seed+uint64(i))
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
			total += n
		}
		n := total
		if err := r.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		fmt.Printf("READY bytes=%d\n", n)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "%v: %s\n", errUnknownRole, role)
		return 2
	}
	time.Sleep(time.Hour) // until killed
	return 0
}

// child is a re-executed test binary running a role.
type child struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

func startChild(t *testing.T, role string, key Key, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RINGCAP_TEST_ROLE="+role, "RINGCAP_TEST_KEY="+key.String())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: bufio.NewScanner(out)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// ready waits for the child's READY line and returns its fields (k=v).
func (c *child) ready(t *testing.T) map[string]string {
	t.Helper()
	for c.lines.Scan() {
		line := c.lines.Text()
		if rest, ok := strings.CutPrefix(line, "READY"); ok {
			m := map[string]string{}
			for _, f := range strings.Fields(rest) {
				k, v, _ := strings.Cut(f, "=")
				m[k] = v
			}
			return m
		}
	}
	_ = c.cmd.Wait()
	t.Fatalf("child exited before READY: %v", c.cmd.ProcessState)
	return nil
}

// kill SIGKILLs the child and reaps it, so its SEM_UNDO adjustments have been applied.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
}

func (c *child) wait(t *testing.T) {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
