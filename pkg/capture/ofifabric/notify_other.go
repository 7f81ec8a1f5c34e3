//go:build !linux

package ofifabric

import (
	"context"
	"errors"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// cqSet needs epoll: elsewhere the endpoints poll.
type cqSet struct{}

func newCQSet([]*ofi.CQ) (*cqSet, error) {
	return nil, errors.New("waiting on completion queues needs Linux")
}

func (s *cqSet) wait(context.Context) error { return errClosed }
func (s *cqSet) close()                     {}

type waiter struct{ events chan struct{} }

func newWaiter(*cqSet) *waiter { return &waiter{} }
func (w *waiter) notify()      {}
func (w *waiter) sleep()       {}
func (w *waiter) close()       {}
