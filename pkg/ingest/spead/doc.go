// Package spead decodes SPEAD packets and places their payload in a byte
// stream. It follows the public SPEAD specification (Streaming Protocol for
// Exchanging Astronomical Data, version 4) as SARAO's spead2 speaks it: an
// 8-byte header (magic 0x53, version 4, the item identifier width and the heap
// address width in bytes, the number of item pointers), that many 64-bit
// big-endian item pointers, then the payload. Two flavours are supported:
// SPEAD-64-48 (header widths 2 and 6) and SPEAD-64-40 (3 and 5).
//
// An item pointer's top bit says whether the item is immediate (its value is
// in the pointer's low heap-address bits) or addressed (those bits are an
// offset into the heap's payload); the bits between are the item ID. The
// standard items every data packet carries, all immediate, are the heap
// counter (0x1), the heap size (0x2, optional), the heap offset of this
// packet's payload (0x3) and the payload length (0x4).
//
// Decode fills a caller's Packet without allocating: the item pointers are
// kept in a fixed array and the payload is a sub-slice of the packet. Its
// errors are preallocated values matched with errors.Is against
// ErrMalformed, so a flood of bad packets allocates nothing either.
//
// A Placer maps a decoded packet to a stream byte offset by a user's Rule: a
// timestamp item and its step per heap give the heap's index, an optional
// channel item and its range give the channel group within that index, and
// the heap offset gives the place inside the heap. Packets the rule cannot
// place are rejected with ErrMalformed or ErrOutOfRange, so a receiver can
// count each reason. The package knows no socket and no ring: its offsets
// feed pkg/capture/placement.
package spead
