// Package vdif decodes VDIF data frames and places their data arrays in a
// byte stream. It follows the public VLBI Data Interchange Format
// specification (VDIF version 1.0 and its revisions): a 32-byte header of
// eight little-endian 32-bit words (or the 16-byte legacy header, words 0 to
// 3, when the legacy bit is set), then the data array.
//
//	word 0: invalid (bit 31), legacy (30), seconds from the reference epoch (29-0)
//	word 1: reference epoch in half-years since 2000 (29-24), frame number within the second (23-0)
//	word 2: VDIF version (31-29), log2 of the channels (28-24), frame length in 8-byte units, header included (23-0)
//	word 3: complex (31), bits per sample - 1 (30-26), thread ID (25-16), station ID (15-0)
//	words 4-7: extended data (word 4's bits 31-24 are the extended data version)
//
// Decode fills a caller's Frame without allocating (the data array is a
// sub-slice of the frame) and rejects with preallocated errors matched by
// ErrMalformed. A Placer maps a frame to a stream byte offset: the frames of
// one second are numbered, the threads of one frame number are interleaved,
// so frame f of second s of thread index k lands at
// ((s-first)*framesPerSecond + f)*threads*payload + k*payload. The package
// knows no socket and no ring: its offsets feed pkg/capture/placement.
package vdif
