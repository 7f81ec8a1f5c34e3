package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// recv refuses, at start, a header it would refuse or misuse at its first
// sender: before it looks for a device or listens (an unusable header is the
// error, not "no RDMA device found" or a receiver that listens and fails later).
func TestRecvRefusesBadHeadersAtStart(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := file("big", "HDR_VERSION 1.0\nCOMMENT "+strings.Repeat("x", 3990)+"\n") // fits 4096 bytes, not with the receiver's keywords
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--header", "OBSERVER=Jane Doe"}, `--header "OBSERVER=Jane Doe": keyword OBSERVER, value "Jane Doe"`},
		{[]string{"--header", "OBSERVER="}, `value ""`},
		{[]string{"--header", "OBSERVER=Jürgen"}, "one printable ASCII word"},
		{[]string{"--header", "HDR_SIZE=8192"}, "keyword HDR_SIZE: set by the receiver"},
		{[]string{"--header", "RINGCAP_OBSERVATION=3"}, "keyword RINGCAP_OBSERVATION: set by the receiver"},
		{[]string{"--header", "TRANSFER_SIZE=1048576"}, "keyword TRANSFER_SIZE: forbidden"},
		{[]string{"--header", "UTC_START=yesterday"}, `UTC_START "yesterday": UTC_START is YYYY-MM-DD-hh:mm:ss`},
		{[]string{"--header-file", file("transfer", "HDR_VERSION 1.0\nTRANSFER_SIZE 1048576\n")}, "keyword TRANSFER_SIZE: forbidden"},
		{[]string{"--header-file", file("utc", "UTC_START yesterday\n")}, `UTC_START "yesterday"`},
		{[]string{"--header-file", file("latin1", "OBSERVER J\xfcrgen\n")}, "not a PSRDADA ASCII header"},
		{[]string{"--header-file", big}, "more than the 4096-byte header block"},
	} {
		k := testKey(t).String()
		args := append([]string{"recv", "-k", k, "--create", "-b", "8192", "-n", "2", "-a", "4096", "--listen", "127.0.0.1:1", "--metrics-addr", ""}, c.args...)
		_, _, err := ringcap(context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ringcap %s: %v, want an error containing %q", strings.Join(args, " "), err, c.want)
		}
	}
}

// send checks its header keywords before it connects, as the receiver would:
// a keyword the receiver sets is an error in --header and left out of a
// PSRDADA header file (which usually has HDR_SIZE and OBS_OFFSET), saying so.
func TestSendHeaderKeywords(t *testing.T) {
	dir := t.TempDir()
	hdr := filepath.Join(dir, "obs.hdr")
	if err := os.WriteFile(hdr, []byte("HDR_VERSION 1.0\nHDR_SIZE 4096\nOBS_OFFSET 0\nSOURCE J0437-4715\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, dropped, err := senderHeader(hdr, []string{"FREQ=1400"})
	want := []wire.HeaderField{{Key: "HDR_VERSION", Value: "1.0"}, {Key: "SOURCE", Value: "J0437-4715"}, {Key: "FREQ", Value: "1400"}}
	if err != nil || len(got) != len(want) || strings.Join(dropped, ",") != "HDR_SIZE,OBS_OFFSET" {
		t.Fatalf("senderHeader = %v, dropped %v, %v; want %v, dropped HDR_SIZE,OBS_OFFSET", got, dropped, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("keyword %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, c := range []struct{ header, want string }{
		{"HDR_SIZE=8192", "keyword HDR_SIZE: set by the receiver"},
		{"TRANSFER_SIZE=1", "keyword TRANSFER_SIZE: forbidden"},
		{"OBSERVER=Jane Doe", `value "Jane Doe"`},
		{"UTC_START=yesterday", `UTC_START "yesterday"`},
	} {
		// Port 1 on loopback: nothing listens, so a check that let this through would
		// fail with a connection error instead.
		args := []string{"send", "--connect", "127.0.0.1:1", "--bytes", "1M", "--header", c.header}
		_, _, err := ringcap(context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ringcap %s: %v, want an error containing %q", strings.Join(args, " "), err, c.want)
		}
	}
}
