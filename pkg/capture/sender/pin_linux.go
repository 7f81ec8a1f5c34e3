package sender

import (
	"fmt"
	"log/slog"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/internal/affinity"
)

// pinThread pins the calling (locked) OS thread as p says; unpin restores
// its former CPU set before the thread goes back to the Go scheduler.
func pinThread(p CPUPin, log *slog.Logger) (unpin func(), err error) {
	if p == PinNone {
		return func() {}, nil
	}
	cpu := int(p) - 1
	if p == PinCurrent {
		var c uint32
		if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), 0, 0); e != 0 {
			return nil, fmt.Errorf("find the current CPU to pin the posting thread to: %w", e)
		}
		cpu = int(c)
	}
	unpin, err = affinity.Pin(cpu)
	if err != nil {
		return nil, fmt.Errorf("pin the posting thread to %w", err)
	}
	log.Info("Pinned the posting thread", "cpu", cpu)
	return unpin, nil
}
