package ofi

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// EnvDefault is a libfabric environment variable the binding sets when the environment
// does not, before libfabric initialises (the process's first Discover or Open).
type EnvDefault struct {
	Name, Value string
	Why         string
}

// EnvDefaults are the variables set before libfabric initialises:
//
// FI_UNIVERSE_SIZE: ofi_rxm sizes the completion queue of its core endpoints (verbs, tcp) as
// the universe size (the peers one endpoint talks to, 256 by default in 1.17) times its
// core receive and transmit sizes, 256*(128+128) entries, beyond what rxe allows (32767):
// fi_enable fails with EINVAL over verbs;ofi_rxm on Soft-RoCE. libfabric has no other knob
// for that queue (neither fi_info nor the CQ attributes reach it); ringcap's endpoints each
// talk to exactly one peer, so 16 is ample and the queue holds 4096 entries.
//
// FI_OFI_RXM_MSG_RX_SIZE: the receive buffers ofi_rxm posts on each endpoint's core receive
// context, each of FI_OFI_RXM_BUFFER_SIZE (16 KiB). Over tcp it shares one receive context
// (srx) and posts 4096 of them by default: 64 MiB of bounce buffers an endpoint, on both sides,
// and 1 GiB for 16 endpoints. 128 is its default without srx (verbs;ofi_rxm), and what one
// peer's messages need: the engine posts its own receives for every message it expects.
//
// FI_OFI_RXM_BUFFER_SIZE: the size of each of ofi_rxm's bounce buffers (16 KiB by default),
// also its eager and inject limit. Each endpoint's receive and transmit pools grow by 1024
// buffers at their first use: 2 x 16.5 MiB an endpoint a side, in huge pages that the kernel
// zeroes, libfabric zeroes again and the core provider registers, mid-stream, since ofi_rxm
// connects at the first operation. Under a software RDMA device that is more CPU than a
// short capture's data. ringcap's data moves by RMA (write mode) and rendezvous (sends larger
// than the eager limit, read straight into the ring); only its 4-byte length messages and
// ofi_rxm's own control messages go through the buffers, so 1 KiB suffices.
var EnvDefaults = []EnvDefault{
	{Name: "FI_UNIVERSE_SIZE", Value: "16", Why: "each endpoint talks to one peer; ofi_rxm's core CQ fits rxe"},
	{Name: "FI_OFI_RXM_MSG_RX_SIZE", Value: "128", Why: "the bounce buffers ofi_rxm posts for one peer: 128 an endpoint, not 4096 over tcp"},
	{Name: "FI_OFI_RXM_BUFFER_SIZE", Value: "1024", Why: "ofi_rxm's pools of 1024 bounce buffers: about 1 MiB each, not 16.5 MiB"},
}

var envOnce sync.Once

// applyEnvDefaults sets EnvDefaults the environment does not set, once per process.
func applyEnvDefaults() {
	envOnce.Do(func() {
		for _, e := range EnvDefaults {
			if _, set := os.LookupEnv(e.Name); !set {
				_ = os.Setenv(e.Name, e.Value)
			}
		}
	})
}

// EnvInEffect says how each of EnvDefaults is set for libfabric in this process (once
// libfabric initialised, or about to): "NAME=VALUE ...", with "(the environment's; ringcap's
// VALUE)" after a value the environment chose over ringcap's.
func EnvInEffect() string { return envInEffect(os.LookupEnv) }

func envInEffect(lookup func(string) (string, bool)) string {
	parts := make([]string, 0, len(EnvDefaults))
	for _, e := range EnvDefaults {
		v, set := lookup(e.Name)
		switch {
		case !set || v == e.Value:
			parts = append(parts, e.Name+"="+e.Value)
		default:
			parts = append(parts, fmt.Sprintf("%s=%s (the environment's; ringcap's %s)", e.Name, v, e.Value))
		}
	}
	return strings.Join(parts, " ")
}
