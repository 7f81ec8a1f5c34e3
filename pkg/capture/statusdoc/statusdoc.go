// Package statusdoc defines the receiver's status document: the JSON that
// `ringcap recv` serves on /status and writes as its summary file (in
// Kubernetes, the termination log), and that the operator reads. It is the one
// definition both sides use; it imports nothing but the standard library, so
// that the operator stays free of cgo and of the capture engine. The engine
// (pkg/capture) assembles it from what the fabric adapters and the endpoint
// choice report in their own types: those packages do not import this one.
//
// The JSON field names are an interface: renaming one breaks operators that
// read older or newer receivers of the same Version.
package statusdoc

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Version is the version of the document; Parse accepts only this one.
const Version = 1

// Receiver states as reported in Status.State.
const (
	StateStarting  = "Starting"
	StateListening = "Listening"
	StateReceiving = "Receiving"
	StateFinished  = "Finished"
	StateFailed    = "Failed"
)

// States lists every state, in the order a receiver goes through them.
var States = []string{StateStarting, StateListening, StateReceiving, StateFinished, StateFailed}

// Ring describes the ring in Status.
type Ring struct {
	Key        string `json:"key"`
	Ready      bool   `json:"ready"`
	Blocks     int    `json:"blocks"`
	BlockBytes int    `json:"blockBytes"`
	Readers    int    `json:"readers"`
}

// Endpoint describes the RDMA endpoint in Status.
type Endpoint struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	Device  string `json:"device"`
	IBPort  int    `json:"ibPort"`
	// GIDIndex is the local GID index. The receiver always sends it (0 until
	// the endpoint is chosen); a reader treats it as absent when null or
	// missing (nil) and as not chosen yet when negative.
	GIDIndex  *int   `json:"gidIndex"`
	GID       string `json:"gid"`
	Netdev    string `json:"netdev"`
	GIDReason string `json:"gidReason"`
	// AddressReason says how the listen address was chosen ("" when it was given).
	AddressReason string `json:"addressReason,omitempty"`
	// AllowedSenders are the networks senders may connect from (["any"] or CIDRs).
	AllowedSenders []string `json:"allowedSenders,omitempty"`
	// MulticastGroups are the groups a packet receiver's sockets joined (senders send
	// to them, at the sockets' port); AddressReason says on which interface.
	MulticastGroups []string `json:"multicastGroups,omitempty"`
}

// MemoryRegistration describes how the ring is registered with the RDMA
// device (Mode is Auto's choice, WholeRing or PerBlock).
type MemoryRegistration struct {
	Mode    string `json:"mode"`
	Regions int    `json:"regions"`
	Bytes   uint64 `json:"bytes"`
	Reason  string `json:"reason"`
}

// Observation describes an observation that ended.
type Observation struct {
	Number   int     `json:"number"`
	Bytes    uint64  `json:"bytes"`
	Blocks   uint64  `json:"blocks"`
	Seconds  float64 `json:"seconds"`
	Gbps     float64 `json:"gbps"`
	Complete bool    `json:"complete"`
	Message  string  `json:"message,omitempty"`
}

// CurrentObservation describes the observation in progress.
type CurrentObservation struct {
	Number int `json:"number"`
	// Bytes landed in the ring for it so far (what it commits when it ends may be less:
	// an incomplete stream keeps its gap-free prefix).
	Bytes uint64 `json:"bytes"`
	// UTCStart is its header's UTC_START (PSRDADA's %Y-%m-%d-%H:%M:%S); empty until the
	// header is in the ring, when its first block is.
	UTCStart string `json:"utcStart,omitempty"`
}

// Status is the receiver's state as served on /status and written to the
// summary file.
type Status struct {
	Version            int                `json:"version"`
	State              string             `json:"state"`
	Message            string             `json:"message"`
	Ring               Ring               `json:"ring"`
	Endpoint           Endpoint           `json:"endpoint"`
	MemoryRegistration MemoryRegistration `json:"memoryRegistration"`
	QueuePairs         int                `json:"queuePairs"`
	TransferMode       string             `json:"transferMode"`
	// Transport is the fabric in use, "verbs" or "ofi" (libfabric); empty from
	// receivers that predate the choice (they run verbs). Provider is the
	// libfabric provider in use with "ofi" (the one chosen, also when none was
	// asked for).
	Transport          string  `json:"transport,omitempty"`
	Provider           string  `json:"provider,omitempty"`
	BusyPoll           bool    `json:"busyPoll"` // polls for completions instead of sleeping (--busy-poll)
	BytesReceived      uint64  `json:"bytesReceived"`
	BlocksFilled       uint64  `json:"blocksFilled"`
	Observations       int     `json:"observations"`
	RateBytesPerSecond float64 `json:"rateBytesPerSecond"`
	// HeldBackSeconds is the time the receiver has been held back by its
	// ring's readers (no block free for the stream), the hold going on now
	// included.
	HeldBackSeconds float64 `json:"heldBackSeconds"`
	// HeldBackSince is when the hold going on now began (RFC 3339 with
	// nanoseconds); empty while the receiver is not held back.
	HeldBackSince string `json:"heldBackSince,omitempty"`
	// Header holds the main keywords (capture.StatusHeaderKeys) of the header
	// of the observation in progress or, between observations, the last one.
	Header           map[string]string `json:"header,omitempty"`
	CompletionErrors uint64            `json:"completionErrors"`
	StartTime        string            `json:"startTime"`      // RFC 3339
	CompletionTime   string            `json:"completionTime"` // RFC 3339, once Finished or Failed
	Seconds          float64           `json:"seconds"`
	Gbps             float64           `json:"gbps"`
	IncompleteObs    int               `json:"incompleteObservations"`
	// LastObservation is the most recent observation that ended.
	LastObservation *Observation `json:"lastObservation,omitempty"`
	// CurrentObservation is the observation in progress; absent between observations.
	CurrentObservation *CurrentObservation `json:"currentObservation,omitempty"`

	// RefusedSenders counts connections refused by the sender allowlist.
	RefusedSenders uint64 `json:"refusedSenders,omitempty"`

	// RingFill is the ring's fill and reader slots, read from the ring when the document
	// was made; absent while the ring cannot be read (not made yet, or closed).
	RingFill *RingFill `json:"ringFill,omitempty"`

	// Packets are the packet counts of a packet-stream receiver (SPEAD,
	// VDIF); absent from an RDMA receiver's document.
	Packets *Packets `json:"packets,omitempty"`
}

// Packets are a packet-stream receiver's counts since it started. Every
// packet handed to its pipeline is counted in Packets and under one outcome:
//
//	Packets = ReceivedPackets + Late + OutOfWindow + Duplicate + Malformed + Invalid + OutOfRange + BeforeStart + Control
//
// KernelDrops (dropped by the kernel, the socket buffer full), Truncated
// (longer than the largest packet accepted) and Refused (from a sender outside
// --allowed-senders) never reach the pipeline.
type Packets struct {
	Protocol        string `json:"protocol"` // "spead" or "vdif"
	Packets         uint64 `json:"packets"`
	ReceivedPackets uint64 `json:"receivedPackets"`
	ReceivedBytes   uint64 `json:"receivedBytes"` // payload bytes written into the ring
	Late            uint64 `json:"late"`
	OutOfWindow     uint64 `json:"outOfWindow"`
	Duplicate       uint64 `json:"duplicate"`
	Malformed       uint64 `json:"malformed"`
	Invalid         uint64 `json:"invalid"`
	OutOfRange      uint64 `json:"outOfRange"`
	BeforeStart     uint64 `json:"beforeStart"`
	Control         uint64 `json:"control"`
	KernelDrops     uint64 `json:"kernelDrops"`
	Truncated       uint64 `json:"truncated"`
	Refused         uint64 `json:"refused"`
	ZeroFilledBytes uint64 `json:"zeroFilledBytes"` // bytes of blocks handed over that no packet carried
	Blocks          uint64 `json:"blocks"`          // blocks handed to the ring
}

// Outcomes is the sum of the outcomes; it equals Packets once no packet is
// being handled.
func (p Packets) Outcomes() uint64 {
	return p.ReceivedPackets + p.Late + p.OutOfWindow + p.Duplicate + p.Malformed + p.Invalid + p.OutOfRange + p.BeforeStart + p.Control
}

// RingFill is how full the ring is and how far each reader slot is behind.
type RingFill struct {
	// FilledBlocks are the blocks the slowest reader slot has still to open.
	FilledBlocks int `json:"filledBlocks"`
	// OpenBlocks are the blocks the receiver holds open (data landing in them).
	OpenBlocks int          `json:"openBlocks"`
	Blocks     int          `json:"blocks"`
	Readers    []ReaderSlot `json:"readers"`
}

// ReaderSlot is one reader slot of the ring.
type ReaderSlot struct {
	Slot      int    `json:"slot"`
	Connected bool   `json:"connected"`
	State     string `json:"state"`
	LagBlocks int    `json:"lagBlocks"`
	LagBytes  uint64 `json:"lagBytes"`
	// LastAdvance is when the slot last went past a block (RFC 3339 with nanoseconds).
	LastAdvance string `json:"lastAdvance"`
}

// Parse decodes a status document and checks its version and state.
func Parse(b []byte) (*Status, error) {
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode receiver status: %w", err)
	}
	if st.Version != Version {
		return nil, fmt.Errorf("decode receiver status: unsupported version %d (want %d)", st.Version, Version)
	}
	if !slices.Contains(States, st.State) {
		return nil, fmt.Errorf("decode receiver status: unknown state %q", st.State)
	}
	return &st, nil
}
