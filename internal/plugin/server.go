package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// poolServer is the device-plugin endpoint of one pool: a gRPC server on
// <kubelet dir>/ringcap-<pool>.sock registered with the kubelet as ringcap.io/<pool>.
type poolServer struct {
	pluginapi.UnimplementedDevicePluginServer

	cfg      Pool
	resource string
	socket   string
	log      logr.Logger
	p        *Plugin

	mu      sync.Mutex
	state   *poolState
	changed chan struct{} // closed (and replaced) when state's ListAndWatch view changes

	srvMu      sync.Mutex
	srv        *grpc.Server
	registered bool
	kubeletID  fileID // identity of the kubelet.sock we registered with
}

func newPoolServer(p *Plugin, cfg Pool) *poolServer {
	return &poolServer{
		cfg:      cfg,
		resource: ResourcePrefix + cfg.Name,
		socket:   filepath.Join(p.opts.KubeletDir, "ringcap-"+cfg.Name+".sock"),
		log:      p.log.WithValues("resource", ResourcePrefix+cfg.Name),
		p:        p,
		state:    &poolState{devs: map[string]devState{}, units: map[string]unit{}},
		changed:  make(chan struct{}),
	}
}

// setState installs a scan's result and wakes ListAndWatch streams when their view
// changed. It returns whether it did.
func (s *poolServer) setState(ps *poolState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, d := range ps.devs {
		old, had := s.state.devs[name]
		switch {
		case !had:
			s.log.Info("Device added", "device", name, "health", d.health(), "reason", d.reason, "port", d.port.Num, "gidReason", d.gidReason)
		case old.healthy != d.healthy:
			s.log.Info("Device health changed", "device", name, "health", d.health(), "reason", d.reason)
		case gidKey(old) != gidKey(d):
			s.log.Info("Device GID choice changed", "device", name, "gidReason", d.gidReason)
		}
	}
	for name := range s.state.devs {
		if _, ok := ps.devs[name]; !ok {
			s.log.Info("Device removed", "device", name)
		}
	}
	same := sameList(s.state.list, ps.list)
	s.state = ps
	if !same {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return !same
}

func gidKey(d devState) string {
	if d.gid == nil {
		return d.gidReason
	}
	return fmt.Sprintf("%d/%d/%s", d.port.Num, d.gid.Index, d.gid.GID)
}

func (s *poolServer) snapshot() (*poolState, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.changed
}

// start listens on the pool's socket and serves the device-plugin API.
func (s *poolServer) start() error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	s.stopLocked()
	if err := os.Remove(s.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", s.socket, err)
	}
	l, err := net.Listen("unix", s.socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.socket, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, s)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error(err, "Device-plugin server stopped")
		}
	}()
	s.srv = srv
	s.registered = false
	return nil
}

// stop stops serving and removes the socket.
func (s *poolServer) stop() {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	s.stopLocked()
}

func (s *poolServer) stopLocked() {
	if s.srv != nil {
		s.srv.Stop() // closes the listener (unlinking the socket) and ends ListAndWatch streams
		s.srv = nil
	}
	s.registered = false
}

// register tells the kubelet about the endpoint.
func (s *poolServer) register(ctx context.Context) error {
	kubeletSock := filepath.Join(s.p.opts.KubeletDir, "kubelet.sock")
	id, err := statID(kubeletSock)
	if err != nil {
		return fmt.Errorf("kubelet socket: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+kubeletSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to kubelet: %w", err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(s.socket),
		ResourceName: s.resource,
		Options:      s.options(),
	})
	if err != nil {
		return fmt.Errorf("register %s with the kubelet: %w", s.resource, err)
	}
	s.srvMu.Lock()
	s.registered, s.kubeletID = true, id
	s.srvMu.Unlock()
	return nil
}

// needsRestart reports why the endpoint must be served and registered again: our
// socket is gone (the kubelet removes every socket when it starts) or kubelet.sock
// is a different file than the one we registered with.
func (s *poolServer) needsRestart() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv == nil {
		return "not serving"
	}
	if _, err := os.Lstat(s.socket); err != nil {
		return "plugin socket removed"
	}
	if !s.registered {
		return "not registered"
	}
	id, err := statID(filepath.Join(s.p.opts.KubeletDir, "kubelet.sock"))
	if err != nil {
		return "" // kubelet gone: wait until it is back
	}
	if id != s.kubeletID {
		return "kubelet.sock recreated"
	}
	return ""
}

func (s *poolServer) options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

// GetDevicePluginOptions implements the device-plugin API.
func (s *poolServer) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return s.options(), nil
}

// ListAndWatch sends the pool's devices now and after every change.
func (s *poolServer) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	s.log.Info("ListAndWatch started")
	for {
		st, changed := s.snapshot()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: st.list}); err != nil {
			return fmt.Errorf("send device list: %w", err)
		}
		s.p.metrics.listAndWatchSends.WithLabelValues(s.resource).Inc()
		select {
		case <-changed:
		case <-stream.Context().Done():
			s.log.Info("ListAndWatch ended")
			return nil
		}
	}
}

// Allocate gives each container exactly its devices' uverbs (and umad/issm when the
// pool says so) character devices plus rdma_cm, and the RINGCAP_* environment of the
// first allocated device.
func (s *poolServer) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	st, _ := s.snapshot()
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		car, err := s.allocateContainer(st, cr.DevicesIds)
		if err != nil {
			s.p.metrics.allocationErrors.WithLabelValues(s.resource).Inc()
			s.log.Error(err, "Allocate refused", "ids", cr.DevicesIds)
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, car)
		s.p.metrics.allocations.WithLabelValues(s.resource).Inc()
		s.log.Info("Allocated", "ids", cr.DevicesIds, "device", car.Envs[EnvDevice], "port", car.Envs[EnvPort],
			"gidIndex", car.Envs[EnvGIDIndex], "gid", car.Envs[EnvGID])
	}
	s.p.links.allocated(allocatedPorts(st, req))
	return resp, nil
}

func (s *poolServer) allocateContainer(st *poolState, ids []string) (*pluginapi.ContainerAllocateResponse, error) {
	if len(ids) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no device IDs")
	}
	var devs []devState
	seen := map[string]bool{}
	for _, id := range ids {
		u, ok := st.units[id]
		if !ok {
			return nil, status.Errorf(codes.NotFound, "%s: unknown device ID %q", s.resource, id)
		}
		if seen[u.dev] {
			continue
		}
		seen[u.dev] = true
		devs = append(devs, st.devs[u.dev])
	}
	car := &pluginapi.ContainerAllocateResponse{Envs: devs[0].env()}
	var names []string
	rdmaCM := ""
	for _, d := range devs {
		if d.dev.UVerbs == "" {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: device %s has no uverbs character device", s.resource, d.dev.Name)
		}
		paths := []string{d.dev.UVerbs}
		if s.cfg.CharDevices.UMad {
			paths = append(paths, d.dev.UMad...)
			paths = append(paths, d.dev.ISSM...)
		}
		for _, p := range paths {
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{ContainerPath: p, HostPath: p, Permissions: "rw"})
		}
		if d.dev.RDMACM != "" {
			rdmaCM = d.dev.RDMACM
		}
		names = append(names, d.dev.Name)
		if s.p.opts.CDIDir != "" {
			car.CdiDevices = append(car.CdiDevices, &pluginapi.CDIDevice{Name: cdiName(s.cfg.Name, d.dev.Name)})
		}
	}
	if rdmaCM != "" {
		car.Devices = append(car.Devices, &pluginapi.DeviceSpec{ContainerPath: rdmaCM, HostPath: rdmaCM, Permissions: "rw"})
	}
	car.Envs[EnvDevices] = strings.Join(names, ",")
	return car, nil
}

// GetPreferredAllocation prefers, in this order: the must-include IDs; devices on the
// NUMA node(s) of the must-include devices; healthy devices; devices not yet chosen
// for this container; the least used device (most free units); the lowest ID.
func (s *poolServer) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	st, _ := s.snapshot()
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses,
			&pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: preferred(st, cr.AvailableDeviceIDs, cr.MustIncludeDeviceIDs, int(cr.AllocationSize))})
	}
	return resp, nil
}

func preferred(st *poolState, available, must []string, size int) []string {
	chosen := append([]string(nil), must...)
	inChosen := map[string]bool{}
	perDev := map[string]int{}
	numas := map[int]bool{}
	for _, id := range must {
		inChosen[id] = true
		if u, ok := st.units[id]; ok {
			perDev[u.dev]++
			numas[st.devs[u.dev].dev.NUMANode] = true
		}
	}
	free := map[string]int{}
	for _, id := range available {
		if u, ok := st.units[id]; ok {
			free[u.dev]++
		}
	}
	for len(chosen) < size {
		best, bestKey := "", []int(nil)
		for _, id := range available {
			u, ok := st.units[id]
			if !ok || inChosen[id] {
				continue
			}
			d := st.devs[u.dev]
			key := []int{b2i(len(numas) > 0 && !numas[d.dev.NUMANode]), b2i(!d.healthy), perDev[u.dev], -free[u.dev]}
			if bestKey == nil || lessKey(key, bestKey) || (equalKey(key, bestKey) && id < best) {
				best, bestKey = id, key
			}
		}
		if best == "" {
			break
		}
		chosen = append(chosen, best)
		inChosen[best] = true
		u := st.units[best]
		perDev[u.dev]++
		free[u.dev]--
		if len(numas) == 0 {
			numas[st.devs[u.dev].dev.NUMANode] = true
		}
	}
	sort.Strings(chosen)
	return chosen
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lessKey(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func equalKey(a, b []int) bool { return !lessKey(a, b) && !lessKey(b, a) }

// PreStartContainer is not used (PreStartRequired is false).
func (s *poolServer) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
