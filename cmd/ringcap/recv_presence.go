package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/receiver"
)

// presenceFlags are recv's presence ring flags (--protocol spead|vdif).
type presenceFlags struct {
	key     dada.Key
	granule uint64
}

func (f *presenceFlags) add(fs *pflag.FlagSet) {
	fs.Var((*keyValue)(&f.key), "presence-key", "with spead or vdif: also write the presence ring at this key (hex): one record per data block saying which granules packets carried and which were zero-filled (ring read --presence prints them); every reader slot must read it too, the receiver waits for it as for the data ring. With --create it is made and destroyed with the data ring, else waited for")
	fs.Var((*byteSize)(&f.granule), "presence-granule", "with --presence-key: bytes per bit of a presence record, best the packet payload (default: --vdif-payload-bytes when given, else 8192)")
}

// config is the presence ring the flags describe, made and drained as the
// data ring is.
func (f *presenceFlags) config(o *recvOpts) (receiver.PresenceConfig, error) {
	if f.key == 0 {
		if f.granule != 0 {
			return receiver.PresenceConfig{}, errors.New("--presence-granule needs --presence-key")
		}
		return receiver.PresenceConfig{}, nil
	}
	return receiver.PresenceConfig{Key: f.key, Granule: f.granule, Create: o.create, Wait: o.wait, Lock: o.ring.Lock, Drain: o.drain}, nil
}
