// Package wire is ringcap's out-of-band capture protocol: the versioned
// handshake and control messages a sender and a `ringcap recv` receiver
// exchange over TCP before and while the data moves over RDMA. It holds the
// preamble (magic and version), the messages (Settings, Hello, Accept,
// Reject, Credit, Posted, Held, End, Done), their framing and a decoder
// that checks every field's range before it allocates anything; and the
// placement rule both ends
// compute from the negotiated Geometry (which slice of the stream goes to
// which block, offset and queue pair), with the limits of a link
// (ValidateLink).
//
// It depends on the standard library only, so a sender written elsewhere
// (another program, another transport) can import it to speak to a ringcap
// receiver. The byte layout of every message, their order and the data
// path are specified in docs/wire-protocol.md, whose examples
// TestGoldenBytes checks against this package's encoder.
package wire
