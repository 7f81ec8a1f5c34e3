package dada

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestConnectWaitsForRingBeingCreated: a reader that finds a ring's sync segment before its
// creator has made the rest (semaphores, blocks, the header ring) gets ErrRingIncomplete from
// Connect, and ConnectWait waits for the ring to be complete instead of failing (a reader
// container starting beside its receiver hit this).
func TestConnectWaitsForRingBeingCreated(t *testing.T) {
	key := testKey(t)
	var created []func() error
	t.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			_ = created[i]()
		}
	})
	// the creator's first object only: the data ring's sync segment
	if _, err := createSync(key, 4, 4096, 1, &created); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(key, ConnectOptions{}); !errors.Is(err, ErrRingIncomplete) {
		t.Fatalf("Connect to a ring with only its sync segment = %v, want ErrRingIncomplete", err)
	}
	done := make(chan error, 1)
	go func() {
		h, err := ConnectWait(context.Background(), key, ConnectOptions{}, time.Minute)
		if err == nil {
			err = h.Close()
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the waiter meet the incomplete ring (it holds either way)
	select {
	case err := <-done:
		t.Fatalf("ConnectWait returned before the ring was complete: %v", err)
	default:
	}
	if err := createSems(key, 1, &created); err != nil {
		t.Fatal(err)
	}
	if _, err := createBlocks(key, 4, 4096, 0, &created); err != nil {
		t.Fatal(err)
	}
	if err := createRing(key+1, Xfers, MinHeaderBufSize, 1, 0, false, &created); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ConnectWait once the ring is complete: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing check
		t.Fatal("ConnectWait did not return after the ring was completed")
	}
}
