// Package sender sends the deterministic test pattern (pkg/pattern) over UDP
// as SPEAD heaps or VDIF frames, each packet carrying the pattern bytes at
// the stream offset the receiver's placement rule gives it, so that a
// `ringcap recv --protocol spead|vdif` with the same rule places stream byte
// k at ring offset k and `ringcap ring read --verify SEED` checks every byte.
package sender
