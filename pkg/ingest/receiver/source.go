package receiver

import (
	"context"
	"sync"

	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// sockets is what the receiver needs of the UDP layer (udp.Receiver).
type sockets interface {
	Run(h udp.Handler) error
	Close() error
}

// udpSource is a stream.Source over UDP sockets: their packets, from every
// socket's goroutine, are handed on one at a time.
type udpSource struct {
	r      sockets
	shared bool  // more than one socket: the handlers take turns
	gate   *gate // nil: every sender's packets go on
}

// Run hands each datagram to handle until ctx ends (the sockets are closed
// then) or a socket fails.
func (s udpSource) Run(ctx context.Context, handle func([]byte)) error {
	stop := context.AfterFunc(ctx, func() { _ = s.r.Close() })
	defer stop()
	if !s.shared {
		return s.r.Run(func(p udp.Packet) {
			if s.gate.admits(p) {
				handle(p.Data)
			}
		})
	}
	var mu sync.Mutex
	return s.r.Run(func(p udp.Packet) {
		if !s.gate.admits(p) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		handle(p.Data)
	})
}
