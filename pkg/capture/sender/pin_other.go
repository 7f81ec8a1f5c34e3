//go:build !linux

package sender

import (
	"errors"
	"log/slog"
)

// pinThread can pin nothing outside Linux: asking to fails.
func pinThread(p CPUPin, _ *slog.Logger) (unpin func(), err error) {
	if p == PinNone {
		return func() {}, nil
	}
	return nil, errors.New("pinning the posting thread needs Linux (sched_setaffinity)")
}
