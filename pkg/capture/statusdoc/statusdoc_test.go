package statusdoc

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// full is a document with every field set, and its JSON: the field names are the
// interface between the receiver and the operator.
func full() Status {
	gid := 3
	return Status{
		Version: Version, State: StateReceiving, Message: "receiving observation 2",
		Ring:               Ring{Key: "dada", Ready: true, Blocks: 8, BlockBytes: 1 << 20, Readers: 2},
		Endpoint:           Endpoint{Address: "10.88.0.7", Port: 18515, Device: "rxe0", IBPort: 1, GIDIndex: &gid, GID: "::ffff:198.18.0.1", Netdev: "eth0", GIDReason: "IPv4-mapped"},
		MemoryRegistration: MemoryRegistration{Mode: "WholeRing", Regions: 1, Bytes: 8 << 20, Reason: "blocks contiguous"},
		QueuePairs:         4, TransferMode: "write", Transport: "ofi", Provider: "tcp;ofi_rxm", BusyPoll: true, BytesReceived: 5 << 20, BlocksFilled: 5, Observations: 2,
		RateBytesPerSecond: 1.5e9, HeldBackSeconds: 2.5, HeldBackSince: "2026-11-21T15:00:00.123456789Z",
		Header: map[string]string{"SOURCE": "J0437-4715"}, CompletionErrors: 1, StartTime: "2026-11-21T14:59:00Z",
		CompletionTime: "2026-11-21T15:01:00Z", Seconds: 3, Gbps: 12.5, IncompleteObs: 1,
		LastObservation:    &Observation{Number: 1, Bytes: 4 << 20, Blocks: 4, Seconds: 2, Gbps: 0.0168, Complete: true, Message: "stopped"},
		CurrentObservation: &CurrentObservation{Number: 2, Bytes: 1 << 20, UTCStart: "2026-11-21-15:00:30"},
		Packets: &Packets{Protocol: "spead", Packets: 100, ReceivedPackets: 90, ReceivedBytes: 737280, Late: 1, OutOfWindow: 1, Duplicate: 2,
			Malformed: 1, Invalid: 1, OutOfRange: 1, BeforeStart: 1, Control: 2, KernelDrops: 3, Truncated: 1, Refused: 5, ZeroFilledBytes: 8192, Blocks: 4},
	}
}

const fullJSON = `{"version":1,"state":"Receiving","message":"receiving observation 2",` +
	`"ring":{"key":"dada","ready":true,"blocks":8,"blockBytes":1048576,"readers":2},` +
	`"endpoint":{"address":"10.88.0.7","port":18515,"device":"rxe0","ibPort":1,"gidIndex":3,"gid":"::ffff:198.18.0.1","netdev":"eth0","gidReason":"IPv4-mapped"},` +
	`"memoryRegistration":{"mode":"WholeRing","regions":1,"bytes":8388608,"reason":"blocks contiguous"},` +
	`"queuePairs":4,"transferMode":"write","transport":"ofi","provider":"tcp;ofi_rxm","busyPoll":true,"bytesReceived":5242880,"blocksFilled":5,"observations":2,` +
	`"rateBytesPerSecond":1500000000,"heldBackSeconds":2.5,"heldBackSince":"2026-11-21T15:00:00.123456789Z",` +
	`"header":{"SOURCE":"J0437-4715"},"completionErrors":1,"startTime":"2026-11-21T14:59:00Z","completionTime":"2026-11-21T15:01:00Z",` +
	`"seconds":3,"gbps":12.5,"incompleteObservations":1,` +
	`"lastObservation":{"number":1,"bytes":4194304,"blocks":4,"seconds":2,"gbps":0.0168,"complete":true,"message":"stopped"},` +
	`"currentObservation":{"number":2,"bytes":1048576,"utcStart":"2026-11-21-15:00:30"},` +
	`"packets":{"protocol":"spead","packets":100,"receivedPackets":90,"receivedBytes":737280,"late":1,"outOfWindow":1,"duplicate":2,` +
	`"malformed":1,"invalid":1,"outOfRange":1,"beforeStart":1,"control":2,"kernelDrops":3,"truncated":1,"refused":5,"zeroFilledBytes":8192,"blocks":4}}`

func TestFieldNames(t *testing.T) {
	b, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != fullJSON {
		t.Errorf("JSON of a full status:\n%s\nwant:\n%s", b, fullJSON)
	}
}

func TestParse(t *testing.T) {
	for _, s := range States {
		st, err := Parse([]byte(`{"version":1,"state":"` + s + `"}`))
		if err != nil || st.State != s {
			t.Errorf("state %s: %+v, %v", s, st, err)
		}
	}
	for _, tc := range []struct{ doc, want string }{
		{`not json`, "decode receiver status"},
		{`{"state":"Listening"}`, "unsupported version 0 (want 1)"},
		{`{"version":2,"state":"Listening"}`, "unsupported version 2 (want 1)"},
		{`{"version":1,"state":"Running"}`, `unknown state "Running"`},
		{`{"version":1}`, `unknown state ""`},
		{`{"version":1,"state":"Listening","bytesReceived":-1}`, "decode receiver status"},
	} {
		if st, err := Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %+v, %v; want an error mentioning %q", tc.doc, st, err, tc.want)
		}
	}
	st, err := Parse([]byte(fullJSON))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(st); string(b) != fullJSON {
		t.Errorf("parsed and marshalled again:\n%s\nwant:\n%s", b, fullJSON)
	}
}

// A reader tells an absent or null gidIndex (nil) from index 0.
func TestGIDIndexAbsent(t *testing.T) {
	for doc, want := range map[string]string{
		`{"version":1,"state":"Listening","endpoint":{}}`:                "absent",
		`{"version":1,"state":"Listening","endpoint":{"gidIndex":null}}`: "absent",
		`{"version":1,"state":"Listening","endpoint":{"gidIndex":0}}`:    "0",
		`{"version":1,"state":"Listening","endpoint":{"gidIndex":-1}}`:   "-1",
	} {
		st, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("Parse(%s): %v", doc, err)
		}
		got := "absent"
		if g := st.Endpoint.GIDIndex; g != nil {
			got = strconv.Itoa(*g)
		}
		if got != want {
			t.Errorf("Parse(%s): gidIndex %s, want %s", doc, got, want)
		}
	}
}

// The packets section adds up: every packet under one outcome.
func TestPacketsOutcomes(t *testing.T) {
	p := full().Packets
	if p.Outcomes() != p.Packets {
		t.Errorf("%+v: outcomes %d, packets %d", p, p.Outcomes(), p.Packets)
	}
}
