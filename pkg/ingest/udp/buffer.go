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
	return fmt.Sprintf("%s (SO_RCVBUF is capped by net.core.rmem_max %s; SO_RCVBUFFORCE, which needs CAP_NET_ADMIN, failed: %v); raise the cap on the node (the setting is the whole machine's) with `sysctl -w net.core.rmem_max=%d`",
		msg, e.capText(), e.Force, e.Wanted)
}

// capText is net.core.rmem_max as read, or as the size obtained shows it when the sysctl
// cannot be read (it is not visible from a network namespace other than the machine's,
// e.g. a pod's).
func (e *BufferError) capText() string {
	if e.RmemMax > 0 {
		return fmt.Sprintf("= %d", e.RmemMax)
	}
	return fmt.Sprintf("(not readable from this network namespace; %d by the size obtained)", e.Obtained)
}
