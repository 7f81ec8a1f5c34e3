package sender

import (
	"log/slog"
	"strings"
	"testing"
)

// Pinning to a CPU that does not exist fails, naming the CPU.
func TestPinToAMissingCPU(t *testing.T) {
	if _, err := pinThread(PinTo(1<<16), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "pin the posting thread to CPU 65536") {
		t.Fatalf("pin to a CPU that does not exist: %v", err)
	}
}
