package ofi

import "fmt"

// The rules by which the binding honours a domain's MR mode, as pure functions of it.

// rmaAddr is the RMA address a peer uses for byte off of a region registered at base: the
// virtual address under MRVirtAddr, else the offset into the region.
func rmaAddr(mode MRMode, base uintptr, off uint64) uint64 {
	if mode&MRVirtAddr != 0 {
		return uint64(base) + off
	}
	return off
}

// requestKey is the key a registration asks for: none under MRProvKey (the provider chooses
// and reports it), else next, which the domain then moves on from (used).
func requestKey(mode MRMode, next uint64) (key uint64, used bool) {
	if mode&MRProvKey != 0 {
		return 0, false
	}
	return next, true
}

// localFault says why n bytes at addr cannot be posted ("" when they can): under MRLocal
// they need their memory region, and they must lie inside the region they name.
func localFault(mode MRMode, hasMR bool, addr uintptr, n int, mrAddr uintptr, mrLen int) string {
	if !hasMR {
		if mode&MRLocal != 0 {
			return "the domain's MR mode has FI_MR_LOCAL: local memory needs its memory region"
		}
		return ""
	}
	if n < 0 || addr < mrAddr || addr+uintptr(n) > mrAddr+uintptr(mrLen) {
		return fmt.Sprintf("%d bytes at %#x lie outside their memory region [%#x, +%d)", n, addr, mrAddr, mrLen)
	}
	return ""
}
