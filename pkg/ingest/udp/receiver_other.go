//go:build !linux

package udp

// Receiver is the non-Linux twin: it cannot be opened.
type Receiver struct{}

// Open returns ErrNotSupported on this platform.
func Open(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, ErrNotSupported
}

// Sockets returns nothing on this platform.
func (r *Receiver) Sockets() []SocketInfo { return nil }

// BufferErr returns nil on this platform.
func (r *Receiver) BufferErr() error { return nil }

// Counters returns zero counters on this platform.
func (r *Receiver) Counters(int) *Counters { return &Counters{} }

// Stats returns zero on this platform.
func (r *Receiver) Stats() Stats { return Stats{} }

// Run returns ErrNotSupported on this platform.
func (r *Receiver) Run(Handler) error { return ErrNotSupported }

// Close does nothing on this platform.
func (r *Receiver) Close() error { return nil }
