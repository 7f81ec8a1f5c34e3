//go:build !linux

package ofifabric

import (
	"errors"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// waiter needs epoll: elsewhere the receive loop polls.
type waiter struct{ events chan struct{} }

func newWaiter([]*ofi.CQ) (*waiter, error) {
	return nil, errors.New("waiting on completion queues needs Linux")
}

func (w *waiter) notify() {}
func (w *waiter) sleep()  {}
func (w *waiter) close()  {}
