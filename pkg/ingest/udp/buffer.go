package udp

import (
	"fmt"
)

// BufferError says that the kernel gave a socket a smaller receive buffer than asked for.
type BufferError struct {
	// Wanted is the size requested; Obtained the size the kernel gave (half of what
	// getsockopt(SO_RCVBUF) reports: Linux doubles the request for its own bookkeeping).
	Wanted, Obtained int
	// RmemMax is net.core.rmem_max, the cap on SO_RCVBUF (0 if it could not be read).
	RmemMax int
	// Force is why SO_RCVBUFFORCE, which ignores the cap, did not help (nil if it was not
	// refused: the kernel's own limit of INT_MAX/2 applies).
	Force error
}

func (e *BufferError) Error() string {
	msg := fmt.Sprintf("socket receive buffer: wanted %d bytes, obtained %d", e.Wanted, e.Obtained)
	if e.Force == nil {
		return msg + " (the kernel's largest socket buffer is 1 GiB)"
	}
	return fmt.Sprintf("%s (SO_RCVBUF is capped by net.core.rmem_max = %d; SO_RCVBUFFORCE, which needs CAP_NET_ADMIN, failed: %v); raise the cap with `sysctl -w net.core.rmem_max=%d`",
		msg, e.RmemMax, e.Force, e.Wanted)
}
