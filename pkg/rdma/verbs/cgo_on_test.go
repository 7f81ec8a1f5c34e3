//go:build linux && cgo

package verbs

const cgoEnabled = true
