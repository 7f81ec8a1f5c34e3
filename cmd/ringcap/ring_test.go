package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/pkg/dada"
)

// testKeys: high bits from the pid, low bits 0xb000.. in steps of 2 (pkg/dada's tests use
// 0xa000..), so concurrent test binaries do not collide. Never 0xdada.
var testKeys = ipctest.NewKeys(0x3000, 64, 0x100, 0xb000)

func testKey(t testing.TB) dada.Key {
	t.Helper()
	return dada.Key(testKeys.Next())
}

// ringcap runs the CLI in-process and returns its stdout and stderr.
func ringcap(ctx context.Context, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	root := newRootCmd(&cpuProfile{})
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errs, err := ringcap(context.Background(), args...)
	if err != nil {
		t.Fatalf("ringcap %s: %v\n%s", strings.Join(args, " "), err, errs)
	}
	return out, errs
}

func createRing(t *testing.T, args ...string) string {
	t.Helper()
	k := testKey(t).String()
	mustRun(t, append([]string{"ring", "create", "-k", k}, args...)...)
	t.Cleanup(func() {
		if err := dada.Destroy(mustKey(k)); err != nil && !errors.Is(err, dada.ErrNoRing) {
			t.Errorf("destroy %s: %v", k, err)
		}
	})
	return k
}

func mustKey(s string) dada.Key {
	k, err := dada.ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func TestRingWriteReadVerify(t *testing.T) {
	k := createRing(t, "-b", "65536", "-n", "4", "-r", "2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type res struct {
		errs string
		err  error
	}
	results := make(chan res, 2)
	go func() { // persistent reader: two observations, stopped by cancel
		_, e, err := ringcap(ctx, "ring", "read", "-k", k, "--verify", "5")
		results <- res{e, err}
	}()
	go func() { // one-observation reader with -s
		_, e, err := ringcap(context.Background(), "ring", "read", "-k", k, "--verify", "5", "-s")
		results <- res{e, err}
	}()
	// Wait until both readers hold their slots, so neither misses the first observation.
	h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.SemRead == 0 }, h)
	_, werr := mustRun(t, "ring", "write", "-k", k, "--seed", "5", "--bytes", fmt.Sprint(3*65536+7), "--observations", "2")
	if !strings.Contains(werr, "write: bytes=393230 blocks=8 observations=2") {
		t.Errorf("write summary: %q", werr)
	}
	single := <-results
	if single.err != nil || !strings.Contains(single.errs, "read: bytes=196615 blocks=4 observations=1 mismatches=0") {
		t.Fatalf("read -s: %v\n%s", single.err, single.errs)
	}
	// The persistent reader holds the slot the single reader released, so wait for it.
	waitFor(t, func(s dada.Snapshot) bool {
		for _, r := range s.Data.Readers {
			if r.RXfer == 2 && r.RState != 0 {
				return true
			}
		}
		return false
	}, h)
	cancel()
	persistent := <-results
	if persistent.err != nil || !strings.Contains(persistent.errs, "read: bytes=393230 blocks=8 observations=2 mismatches=0") {
		t.Fatalf("persistent read: %v\n%s", persistent.err, persistent.errs)
	}
}

func waitFor(t *testing.T, cond func(dada.Snapshot) bool, h *dada.HDU) {
	t.Helper()
	for i := 0; ; i++ {
		s, err := h.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if cond(s) {
			return
		}
		if i > 3000 {
			t.Fatal("condition not reached in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRingReadMismatchFails(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "4")
	mustRun(t, "ring", "write", "-k", k, "--seed", "1", "--bytes", "10000")
	_, errs, err := ringcap(context.Background(), "ring", "read", "-k", k, "--verify", "2", "-s")
	if err == nil || !strings.Contains(errs, "read: bytes=10000 blocks=3 observations=1 mismatches=3") {
		t.Fatalf("read with the wrong seed: err=%v\n%s", err, errs)
	}
}

func TestRingReadWaitsForCreation(t *testing.T) {
	k := testKey(t).String()
	done := make(chan error, 1)
	var errs string
	go func() {
		var err error
		_, errs, err = ringcap(context.Background(), "ring", "read", "-k", k, "--wait", "60s", "--verify", "9", "-s", "-o", t.TempDir()+"/out")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the reader starts before the ring exists
	mustRun(t, "ring", "create", "-k", k, "-b", "8192", "-n", "2")
	t.Cleanup(func() { _ = dada.Destroy(mustKey(k)) })
	mustRun(t, "ring", "write", "-k", k, "--seed", "9", "--bytes", "20000", "--wait", "10s")
	if err := <-done; err != nil || !strings.Contains(errs, "read: bytes=20000 blocks=3 observations=1 mismatches=0") {
		t.Fatalf("read --wait: %v\n%s", err, errs)
	}
}

func TestRingFileRoundTrip(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "8")
	dir := t.TempDir()
	in := bytes.Repeat([]byte("psrdada!"), 3000) // 24000 bytes
	if err := os.WriteFile(dir+"/in", in, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/hdr", []byte("TELESCOPE Parkes\nSOURCE J0437-4715\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ring", "write", "-k", k, "-f", dir+"/in", "--header-file", dir+"/hdr", "--header", "FREQ=1400")
	hdr, _ := mustRun(t, "ring", "header", "-k", k, "--wait", "10s")
	if !strings.Contains(hdr, "SOURCE J0437-4715") || !strings.Contains(hdr, "FREQ         1400") || !strings.Contains(hdr, "HDR_SIZE     4096") {
		t.Errorf("ring header printed:\n%s", hdr)
	}
	mustRun(t, "ring", "read", "-k", k, "-s", "-o", dir+"/out", "--header-out", dir+"/out.hdr")
	out, err := os.ReadFile(dir + "/out")
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("read back %d bytes, want %d identical (%v)", len(out), len(in), err)
	}
}

func TestRingCreateInfoMonitorDestroy(t *testing.T) {
	k := createRing(t, "-b", "1048576", "-n", "8", "-a", "8192", "-r", "2", "-p")
	if _, errs, err := ringcap(context.Background(), "ring", "create", "-k", k); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v %s", err, errs)
	}
	out, _ := mustRun(t, "ring", "info", "-k", k)
	for _, want := range []string{"nbufs=8 bufsz=1048576 readers=2", "contiguous: true", "header ring", "bufsz=8192", "slot 0: [0,0] => [0,0] eod=1 W R0 R1"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	js, _ := mustRun(t, "ring", "info", "-k", k, "--json")
	var v struct {
		Key        dada.Key      `json:"key"`
		Contiguous bool          `json:"contiguous"`
		Snapshot   dada.Snapshot `json:"snapshot"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil || !v.Contiguous || v.Snapshot.Data.NBufs != 8 || v.Key.String() != k ||
		v.Snapshot.Data.Key.String() != k || len(v.Snapshot.Data.Readers) != 2 {
		t.Errorf("info --json: %v %+v", err, v)
	}
	checkLowerCamel(t, js)
	mon, _ := mustRun(t, "ring", "monitor", "-k", k, "-c", "2", "--interval", "10ms")
	for _, want := range []string{"Number of readers: 2", "Total buffer memory: 8 MB", "Total buffer memory: 64 KB",
		"HEADER               DATA0                      DATA1\nFRE FUL CLR  W  R    FRE FUL CLR     W     R    FRE FUL CLR     W     R\n",
		"  8   0   0  0  0      8   0   0     0     0      8   0   0     0     0\n"} {
		if !strings.Contains(mon, want) {
			t.Errorf("monitor lacks %q:\n%s", want, mon)
		}
	}
	mustRun(t, "ring", "create", "-k", k, "-d") // dada_db -d
	if _, _, err := ringcap(context.Background(), "ring", "info", "-k", k); !errors.Is(err, dada.ErrNoRing) {
		t.Fatalf("info after destroy: %v", err)
	}
	for _, bad := range [][]string{
		{"ring", "create", "-k", "0"}, {"ring", "create", "-k", testKey(t).String(), "-r", "9"},
		{"ring", "create", "-k", testKey(t).String(), "-a", "100"}, {"ring", "destroy", "-k", testKey(t).String()},
		{"ring", "write", "-k", k}, {"ring", "create", "-k", "xyz"}, {"ring", "destroy", "-k", k},
	} {
		if _, _, err := ringcap(context.Background(), bad...); err == nil {
			t.Errorf("ringcap %v succeeded", bad)
		}
	}
}

// removeStaleTestRings destroys rings at this file's test keys that a killed earlier run
// left behind (creator gone, nothing attached).
func removeStaleTestRings() {
	stale := ipctest.StaleSyncSegments(func(key uint32) bool {
		low, high := key&0xffff, key>>16
		return low >= 0xb000 && low <= 0xb0ff && low%2 == 0 && high >= 0x3000 && high < 0x7000 && high%0x100 == 0
	})
	for _, k := range stale {
		if dada.Destroy(dada.Key(k)) == nil {
			fmt.Fprintf(os.Stderr, "removed stale test ring %s left by a dead process\n", dada.Key(k))
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("RINGCAP_TEST_RUN_CLI") != "" { // a command in a process of its own (TestOFIKilledSender)
		mountTestTmpfs()
		main()
		os.Exit(0)
	}
	ipctest.Isolate() // a SysV IPC namespace of its own: the leak check sees only its rings
	removeStaleTestRings()
	code := m.Run()
	printBenchLines()
	// Fail when any goroutine of a command outlives its test.
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "LEAK:", err)
		code = 1
	}
	// Fail when any shared memory segment or semaphore set of a test key is left.
	if !ipctest.CheckLeaks(testKeys.Used(), 70) {
		code = 1
	}
	os.Exit(code)
}

// An interrupted writer blocked on a full ring returns and releases its lock.
func TestRingWriteInterrupted(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "2")
	h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := ringcap(ctx, "ring", "write", "-k", k, "--seed", "1", "--bytes", "100000")
		done <- err
	}()
	// No reader: the writer fills both blocks and then waits for one to be cleared.
	waitFor(t, func(s dada.Snapshot) bool { return s.Data.WBufCurr == 2 && s.Data.WBufNext == 2 }, h)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted write = %v, want context.Canceled", err)
	}
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if s.Data.SemWrite != 1 || s.Header.SemWrite != 1 {
		t.Fatalf("write locks after the interrupted writer: data %d header %d, want 1 1", s.Data.SemWrite, s.Header.SemWrite)
	}
}

// The loop: a fresh `ring read -s` per observation, each observation a
// `ring write` of its own, gets that observation's header (OBSNAME), and so does
// `ring header` once the observation is written, in both header styles.
func TestRingReadGetsEachObservationsHeader(t *testing.T) {
	for _, style := range [][]string{nil, {"--new-style-header"}} {
		t.Run(fmt.Sprintf("style=%v", style), func(t *testing.T) {
			k := createRing(t, "-b", "1048576", "-n", "8")
			h, err := dada.Connect(mustKey(k), dada.ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = h.Close() }()
			dir := t.TempDir()
			for _, obs := range []string{"OBS1", "OBS2", "OBS3"} {
				hdrFile := dir + "/h_" + obs
				done := make(chan error, 1)
				go func() {
					_, e, err := ringcap(context.Background(), "ring", "read", "-k", k, "-s", "-o", os.DevNull, "--header-out", hdrFile)
					if err != nil {
						err = fmt.Errorf("%w\n%s", err, e)
					}
					done <- err
				}()
				waitFor(t, func(s dada.Snapshot) bool { return s.Data.SemRead == 0 }, h)
				mustRun(t, append([]string{"ring", "write", "-k", k, "--seed", "1", "--bytes", "1000000", "--header", "OBSNAME=" + obs}, style...)...)
				if err := <-done; err != nil {
					t.Fatalf("%s: read: %v", obs, err)
				}
				got, err := os.ReadFile(hdrFile)
				if err != nil {
					t.Fatal(err)
				}
				if !regexp.MustCompile(`(?m)^OBSNAME +` + obs + `$`).Match(got) {
					t.Errorf("%s: the reader got the header\n%s", obs, got)
				}
			}
			// A viewer after the last observation was read shows nothing stale: write a
			// fourth with no reader and look.
			mustRun(t, append([]string{"ring", "write", "-k", k, "--seed", "1", "--bytes", "1000", "--header", "OBSNAME=OBS4"}, style...)...)
			hdr, _ := mustRun(t, "ring", "header", "-k", k, "--wait", "10s")
			if !regexp.MustCompile(`(?m)^OBSNAME +OBS4$`).MatchString(hdr) {
				t.Errorf("ring header after OBS4 shows\n%s", hdr)
			}
		})
	}
}

// checkLowerCamel fails on any object key of the JSON document that does not start
// with a lower-case letter: one naming style throughout, as the other JSON ringcap
// prints (status, headers) uses.
func checkLowerCamel(t *testing.T, doc string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "" || k[0] < 'a' || k[0] > 'z' {
					t.Errorf("JSON key %s.%s is not lowerCamelCase", path, k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", v)
}

// A ring command without -k takes the key a capture's readers get in RINGCAP_RING_KEY;
// -k wins over it, and a key it cannot parse is refused, naming the variable.
func TestRingKeyDefaultsFromTheEnvironment(t *testing.T) {
	k := createRing(t, "-b", "4096", "-n", "2")
	t.Setenv("RINGCAP_RING_KEY", k)
	out, _ := mustRun(t, "ring", "info")
	if !strings.Contains(out, k) {
		t.Errorf("ring info with RINGCAP_RING_KEY=%s, no -k, printed another ring:\n%s", k, out)
	}
	other := testKey(t).String()
	if _, _, err := ringcap(context.Background(), "ring", "info", "-k", other); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("ring info -k %s with RINGCAP_RING_KEY=%s = %v, want -k's ring (which does not exist)", other, k, err)
	}
	t.Setenv("RINGCAP_RING_KEY", "zz")
	if _, _, err := ringcap(context.Background(), "ring", "info"); err == nil || !strings.Contains(err.Error(), "RINGCAP_RING_KEY") {
		t.Errorf("ring info with RINGCAP_RING_KEY=zz = %v, want an error naming the variable", err)
	}
}
