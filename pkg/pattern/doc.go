// Package pattern generates and checks ringcap's deterministic test stream.
//
// The byte at absolute stream offset o is a pure function of (seed, o): byte o%8 (little
// endian) of splitmix64(seed ^ o/8). Any slice of the stream can therefore be generated or
// verified independently, in any order, by a writer, a sender or a reader that knows only
// the seed and the offset (bytes since the start of the observation, OBS_OFFSET 0).
package pattern
