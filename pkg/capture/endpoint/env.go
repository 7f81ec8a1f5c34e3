package endpoint

import (
	"fmt"
	"strconv"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Environment the device plugin sets in the container (see cmd/plugin).
const (
	EnvDevice   = "RINGCAP_RDMA_DEVICE"
	EnvPort     = "RINGCAP_RDMA_PORT"
	EnvGIDIndex = "RINGCAP_GID_INDEX"
)

// WithEnv fills what the request leaves automatic from the device plugin's
// environment (read with getenv) and, when it took anything from there, says
// so in Source.
func (r Request) WithEnv(getenv func(string) string) (Request, error) {
	return r.withEnv(getenv, false)
}

// withEnv is WithEnv, leaving out the environment's GID index with skipGID.
func (r Request) withEnv(getenv func(string) string, skipGID bool) (Request, error) {
	fromEnv := false
	if v := getenv(EnvDevice); r.Device == "" && v != "" {
		r.Device, fromEnv = v, true
	}
	if v := getenv(EnvPort); r.Port == 0 && v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return r, fmt.Errorf("$%s=%q: %w", EnvPort, v, err)
		}
		r.Port, fromEnv = p, true
	}
	if v := getenv(EnvGIDIndex); r.GIDIndex < 0 && !skipGID && v != "" {
		g, err := strconv.Atoi(v)
		if err != nil {
			return r, fmt.Errorf("$%s=%q: %w", EnvGIDIndex, v, err)
		}
		r.GIDIndex, fromEnv = g, true
	}
	if fromEnv {
		r.Source = "the device plugin environment"
	}
	return r, nil
}

// Find discovers the RDMA devices under roots and chooses the device, port and
// GID for the request (see Choose). It also returns the devices it found.
func Find(roots rdma.Roots, req Request) (fabric.DeviceConfig, Chosen, []rdma.Device, error) {
	devs, _, err := rdma.Discover(roots)
	if err != nil {
		return fabric.DeviceConfig{}, Chosen{}, nil, fmt.Errorf("discover RDMA devices: %w", err)
	}
	cfg, ep, err := Choose(devs, req)
	return cfg, ep, devs, err
}
