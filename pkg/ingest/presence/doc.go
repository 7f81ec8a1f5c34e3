// Package presence is the per-block presence record of a packet receiver:
// which parts of each data block of a PSRDADA ring packets carried, and
// which the receiver zero-filled. `ringcap recv --presence-key` writes one
// record per data block, in order, into a second ring (the presence ring);
// a reader that wants to weight or flag zero-filled data reads it beside the
// data ring, and readers that do not know of it are unaffected.
//
// # The record
//
// A record is little-endian: a fixed header of HeaderBytes bytes, then a
// bitmap of one bit per granule of the data block.
//
//	offset  size  field
//	0       8     magic "RINGPRES"
//	8       4     version (1)
//	12      4     flags: bit 0 set on the block that ends the observation
//	16      8     data block sequence number within the observation
//	24      8     bytes expected: the data block's bytes (the block size but
//	              for the observation's last block)
//	32      8     bytes received: those packets carried, the rest zero
//	40      8     granule bytes G
//	48      8     granules N = ceil(expected / G)
//	56      ceil(N/8)  bitmap: granule k is bit k%8 (least significant
//	              first) of byte k/8; 1 = every byte of the granule
//	              received, 0 = at least one byte zero-filled; the bits
//	              past N are 0
//
// Granule k covers the data block's bytes k*G up to (k+1)*G, the last one up
// to the bytes expected. A granule is the unit of placement when G is the
// packet payload (SPEAD) or the frame's data array (VDIF) and divides the
// block size: then a lost packet clears exactly its granule. Loss that
// does not align to granules clears every granule it touches, so a set bit
// always means data; the exact byte count of the loss is expected minus
// received.
package presence
