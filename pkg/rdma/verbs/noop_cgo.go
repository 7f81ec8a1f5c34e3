//go:build linux && cgo

package verbs

/*
static void rc_noop(void) {}
*/
import "C"

// Noop crosses into C and back doing nothing: the cost of one cgo call, for
// benchmark fabrics (pkg/capture/benchfabric) that make as many crossings as
// the verbs adapter does without touching a device. It counts in Crossings.
func Noop() {
	crossings.Add(1)
	C.rc_noop()
}
