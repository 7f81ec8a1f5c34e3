// Package assemble writes placed packet payloads into the blocks of a
// PSRDADA ring and counts every packet it does not write, by reason. It sits
// between a packet decoder with a placement rule (pkg/ingest/spead,
// pkg/ingest/vdif: a stream byte offset per payload) and the ring (a
// pkg/capture/ring Worker over a ring.BlockWriter, pkg/dada's writer in
// production). It knows no socket.
//
// # One copy
//
// Put copies a payload straight from the receive buffer into the ring block
// that holds its stream offset; a payload that crosses a block boundary is
// split between the two blocks. Nothing else copies packet data.
//
// # The reorder window
//
// Window blocks are open at once: stream blocks base .. base+Window-1. A
// payload for a block past the newest one advances the window: the oldest
// blocks leave it and are handed to the ring as filled, their missing bytes
// zero-filled. A payload that reaches more than MaxAhead blocks past the
// window is counted out-of-window and dropped, so that one stray packet (a
// corrupt timestamp) cannot flush the whole ring with zeros. A run of
// ResyncAfter such payloads in a row shows that the stream itself has moved
// on (an outage, a burst the kernel dropped): the last of them moves the
// window to it, the blocks in between handed over zero-filled and recorded,
// so that a gap longer than the window never ends the capture. A stream that
// jumps further than MaxJump blocks has left the observation (a sender
// restarted with another timestamp base): Put returns a *JumpError. A payload
// that touches a block already handed over is counted late and never written
// (the readers own that block). A payload that overlaps bytes already present
// is counted duplicate and not written at all, so data in place is never
// rewritten; its other bytes, if any were missing, stay missing and are
// recorded as such. Blocks inside the window are handed over only when the
// window moves past them or at Close. Each packet is counted under exactly
// one outcome:
//
//	packets = received + late + out-of-window + duplicate + malformed
//
// where malformed packets are the ones the caller's decoder or placer
// rejected and reported with Malformed (and payloads that run past the
// stream's 2^64 bytes), so that all reasons live in one place.
//
// Presence inside a block is kept as a sorted list of received byte ranges,
// merged as they grow: a stream in order costs one comparison per packet, a
// reordered one a binary search, and the missing bytes of a block are the
// complement of the list, exact to the byte whatever the payload sizes. The
// lists keep their arrays from block to block, so Put allocates nothing once
// they have grown to the stream's pattern of gaps.
//
// # The loss record
//
// A PSRDADA header belongs to an observation, not to a block, so a per-block
// header key cannot carry loss. A second ring of weights (as SKA's PST
// writes) would need readers that know of it; dada_dbdisk and the other
// PSRDADA readers do not. The assembler therefore reports each block it hands
// over as a Record (sequence number, ring index, bytes expected, bytes
// received and the missing byte ranges, which are zero in the block) through
// the OnBlock callback, before the block is marked filled, together with
// cumulative Counters. The receiver decides where records go (its status, a
// sidecar file, a weights ring later); the data in the ring stay plain
// PSRDADA that every reader can use.
//
// # Concurrency
//
// Put, Malformed and Close are called from one goroutine (the receive
// goroutine that owns this assembler); Snapshot may be called from any
// goroutine at any time. Put waits when the ring has no free block (the
// readers are behind); the kernel then drops packets, which the socket layer
// counts.
package assemble
