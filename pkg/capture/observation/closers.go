package observation

import "errors"

// Closers closes the parts of a stage in the reverse of the order they were
// pushed: a part pushed later depends on those pushed before it (a data path
// on the blocks it writes into, the blocks on the worker that hands them
// out), so it closes first. The order is this code, not a comment.
type Closers struct {
	parts []func() error
}

// Push adds a part for Close to close.
func (c *Closers) Push(close func() error) {
	c.parts = append(c.parts, close)
}

// Close closes every part, the last pushed first, each once (even after one
// fails), and returns their errors joined; a second call closes nothing.
func (c *Closers) Close() error {
	var errs []error
	for i := len(c.parts) - 1; i >= 0; i-- {
		if err := c.parts[i](); err != nil {
			errs = append(errs, err)
		}
	}
	c.parts = nil
	return errors.Join(errs...)
}
