package observation

import (
	"errors"
	"slices"
	"testing"
)

// Parts close in the reverse of the order they were pushed, every one even
// when one fails, each once.
func TestClosersReverseOrder(t *testing.T) {
	var c Closers
	var order []string
	for _, name := range []string{"ring worker", "end of data", "queue pairs"} {
		c.Push(func() error {
			order = append(order, name)
			if name == "end of data" {
				return errors.New("readers gone")
			}
			return nil
		})
	}
	err := c.Close()
	if want := []string{"queue pairs", "end of data", "ring worker"}; !slices.Equal(order, want) {
		t.Fatalf("closed %v, want %v", order, want)
	}
	if err == nil || err.Error() != "readers gone" {
		t.Fatalf("error %v, want the end of data's", err)
	}
	if err := c.Close(); err != nil || len(order) != 3 {
		t.Fatalf("second Close: %v, closed %v", err, order)
	}
}
