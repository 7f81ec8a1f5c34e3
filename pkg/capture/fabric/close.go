package fabric

import (
	"io"
	"log/slog"
)

// CloseLogged closes c and logs a failure at warning level, naming what: a
// queue pair, endpoint, region or domain that verbs or libfabric could not
// release is a leak the caller cannot act on, but it must not go unseen.
func CloseLogged(log *slog.Logger, what string, c io.Closer) {
	if err := c.Close(); err != nil {
		log.Warn("Could not close "+what, "err", err)
	}
}
