//go:build !linux || !cgo

package verbs

// Noop is the twin of the cgo build's Noop: without cgo there is no crossing
// to make, so it does nothing.
func Noop() {}
