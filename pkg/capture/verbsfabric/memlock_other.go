//go:build !linux

package verbsfabric

import "errors"

// currentMemlock has nothing to read outside Linux, where nothing registers.
func currentMemlock() (memlockState, error) {
	return memlockState{}, errors.New("memlock limits are read on Linux only")
}
