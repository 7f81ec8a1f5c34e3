// Package wire is ringcap's out-of-band capture protocol: the versioned
// handshake and control messages a sender and a `ringcap recv` receiver
// exchange over TCP before and while the data moves over RDMA. It holds the
// preamble (magic and version), the messages (Hello, Accept, Reject, Credit,
// End, Done, Held), their framing and a decoder that checks every field's
// range before it allocates anything; and the placement rule both ends
// compute from the negotiated Geometry (which slice of the stream goes to
// which block, offset and queue pair), with the limits of a link
// (ValidateLink).
//
// It depends on the standard library only, so a sender written elsewhere
// (another program, another transport) can import it to speak to a ringcap
// receiver. The protocol itself is described in docs/capture-protocol.md.
package wire
