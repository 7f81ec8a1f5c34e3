// Package placement places a byte stream into the blocks of a ring: it maps a
// stream byte offset to a block and a slot in it, keeps the window of blocks
// open for data (a presence bitmap per block, as spead2 keeps one per heap),
// hands out the blocks that are complete in sequence order, and knows where
// the observation ends. It is pure logic with no transport in it: the RC
// receiver feeds it from work completions, and any receiver that knows where
// in the stream a piece of data belongs (a packet carrying its byte offset)
// can feed it the same way.
//
// The stream is cut into blocks of Geometry.BlockBytes and each block into
// slices of Geometry.SliceBytes (the last one of a block shorter when the
// block is not a multiple of it). Slice n of the stream is slot n mod S of
// block n div S, S being SlicesPerBlock. Data lands a slice at a time; a
// slice shorter than its slot ends the stream.
package placement
