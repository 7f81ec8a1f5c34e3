package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// Without --once, top redraws every interval until its context ends (an interrupt), which
// is not an error; frames on a pipe are separated by a blank line (no terminal codes).
func TestTopRedrawsUntilInterrupted(t *testing.T) {
	rc := capture("radio", "pulsar", time.Minute, receivingStatus())
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(&rc).Build()
	var out bytes.Buffer
	tp := &topper{s: &session{client: c, namespace: "radio"}, now: func() time.Time { return testNow }, out: &out}
	ctx, interrupt := context.WithCancel(context.Background())
	time.AfterFunc(250*time.Millisecond, interrupt)
	if err := tp.loop(ctx, 50*time.Millisecond); err != nil {
		t.Fatalf("loop ended with %v, want nil on an interrupt", err)
	}
	frames := strings.Split(out.String(), "\n\n")
	if len(frames) < 2 {
		t.Fatalf("%d frames, want several:\n%s", len(frames), out.String())
	}
	for _, f := range frames {
		if !strings.HasPrefix(f, "NAME") || !strings.Contains(f, "slot 1: 6 blocks (6.0 MiB)") {
			t.Errorf("frame %q: want the table with pulsar's slowest reader", f)
		}
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("terminal codes written to a pipe")
	}
}

func TestTopNothingFound(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	for _, tc := range []struct {
		all  bool
		want string
	}{{false, "No RingCaptures found in namespace radio.\n"}, {true, "No RingCaptures found in any namespace.\n"}} {
		var out bytes.Buffer
		tp := &topper{s: &session{client: c, namespace: "radio"}, all: tc.all, now: time.Now, out: &out}
		if err := tp.frame(context.Background()); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("all=%v: %q, want %q", tc.all, out.String(), tc.want)
		}
	}
}

func TestFindAcrossNamespaces(t *testing.T) {
	a := capture("radio", "pulsar", time.Minute, ringcapv1.RingCaptureStatus{})
	b := capture("optical", "pulsar", time.Minute, ringcapv1.RingCaptureStatus{})
	d := capture("optical", "flash", time.Minute, ringcapv1.RingCaptureStatus{})
	s := &session{client: fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(&a, &b, &d).Build(), namespace: "radio"}
	if rc, err := find(context.Background(), s, "flash", true); err != nil || rc.Namespace != "optical" {
		t.Errorf("find flash -A: %v, %v", rc, err)
	}
	if _, err := find(context.Background(), s, "pulsar", true); err == nil || !strings.Contains(err.Error(), "optical, radio") {
		t.Errorf("find pulsar -A: error %v, want one naming both namespaces", err)
	}
	if rc, err := find(context.Background(), s, "pulsar", false); err != nil || rc.Namespace != "radio" {
		t.Errorf("find pulsar: %v, %v", rc, err)
	}
	if _, err := find(context.Background(), s, "missing", true); err == nil {
		t.Error("find missing -A: no error")
	}
}
