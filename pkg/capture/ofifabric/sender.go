package ofifabric

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Sender is a fabric.SenderFabric over libfabric with a registered send buffer.
type Sender struct {
	d    *ofi.Domain
	prov wire.Fabric
	buf  []byte
	mr   *ofi.MR
	// lenMsg: write mode with length messages (see lengthMessages).
	lenMsg bool
	log    *slog.Logger
	noWait sync.Once // the sender said its endpoints poll
}

// NewSender opens the domain and registers a send buffer of n bytes
// (anonymous memory, outside the Go heap).
func NewSender(cfg Config, n uint64) (*Sender, error) {
	if n == 0 {
		return nil, errors.New("open the sender's fabric: empty send buffer")
	}
	d, err := openDomain(cfg)
	if err != nil {
		return nil, err
	}
	buf, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("map the %d-byte send buffer: %w", n, err)
	}
	mr, err := d.RegisterMR(uintptr(unsafe.Pointer(&buf[0])), len(buf), ofi.CapSend|ofi.CapWrite)
	if err != nil {
		_ = d.Close()
		_ = unix.Munmap(buf)
		return nil, fmt.Errorf("register the %d-byte send buffer: %w", n, err)
	}
	s := &Sender{d: d, prov: fabricOf(d), buf: buf, mr: mr, lenMsg: lengthMessages(cfg, d.Info()),
		log: cmp.Or(cfg.Log, slog.Default())}
	s.log.Info("Opened the libfabric domain", "provider", d.Info().Provider, "domain", d.Info().Domain, "environment", ofi.EnvInEffect())
	return s, nil
}

// Open implements fabric.SenderFabric.
func (s *Sender) Open(_ context.Context, cfg fabric.EndpointConfig) (fabric.Endpoint, error) {
	if s.d == nil {
		return nil, errors.New("open endpoints: sender fabric closed")
	}
	ep, err := newEndpoint(s.d, cfg, false)
	if err != nil {
		return nil, err
	}
	ep.sendMR = s.mr
	if ep.set == nil {
		s.noWait.Do(func() {
			s.log.Info("Libfabric completion queues have no wait fds: the sender polls, with short sleeps, while every send slot is in flight",
				"provider", s.prov.Provider, "reason", ep.noWait)
		})
	}
	if s.lenMsg {
		// A work request is at most two operations; the words of the
		// SendDepth outstanding ones, and of two more, are never reused
		// before their messages complete (appendLenWrite checks).
		if ep.lenTx, err = newLenWords(s.d, cfg.QPs, 2*cfg.SendDepth+2, ofi.CapSend); err != nil {
			_ = ep.Close()
			return nil, fmt.Errorf("open endpoints: %w", err)
		}
	}
	return ep, nil
}

// Buffer implements fabric.SenderFabric.
func (s *Sender) Buffer() []byte { return s.buf }

// Fabric implements fabric.SenderFabric.
func (s *Sender) Fabric() wire.Fabric { return s.prov }

// Info is what the opened domain offers.
func (s *Sender) Info() ofi.Info { return s.d.Info() }

// Close closes the domain and everything on it, then unmaps the buffer;
// idempotent.
func (s *Sender) Close() error {
	if s.d == nil {
		return nil
	}
	err := errors.Join(s.d.Close(), unix.Munmap(s.buf))
	s.d, s.buf = nil, nil
	return err
}
