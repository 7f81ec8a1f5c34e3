package dra

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// ErrNotRegistered is returned by Run when the kubelet did not register the driver
// within Options.RegistrationTimeout.
var ErrNotRegistered = errors.New("the kubelet did not register the driver")

// registrarSocket is the registration socket the kubeletplugin helper creates in the
// kubelet's plugins_registry: its default name, or with RollingUpdate(podUID) the name
// kubeletplugin.RollingUpdateRegistrarSocketFile gives that pod.
func registrarSocket(registryDir string, podUID types.UID) string {
	if podUID != "" {
		return filepath.Join(registryDir, kubeletplugin.RollingUpdateRegistrarSocketFile(registryDir, DriverName, podUID))
	}
	return filepath.Join(registryDir, DriverName+"-reg.sock")
}

// registrationWatch follows the kubelet's registration calls on the driver's registration
// socket (a gRPC interceptor of the helper's servers): the kubeletplugin helper's own
// RegistrationStatus is not safe to read while the kubelet calls.
type registrationWatch struct {
	registered func(bool) // told each registration outcome (the metric)

	mu        sync.Mutex
	asked     bool   // the kubelet called GetInfo
	refused   string // the kubelet's last refusal
	done      chan struct{}
	closeOnce sync.Once
}

func newRegistrationWatch(registered func(bool)) *registrationWatch {
	return &registrationWatch{registered: registered, done: make(chan struct{})}
}

// probeKey marks the driver's own health probe calls (metadata), which are not the kubelet's.
const probeKey = "x-ringcap-probe"

func isProbe(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(probeKey)) > 0
}

// intercept is a grpc.UnaryServerInterceptor.
func (r *registrationWatch) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if isProbe(ctx) {
		return resp, err
	}
	switch req := req.(type) {
	case *registerapi.InfoRequest:
		r.mu.Lock()
		r.asked = true
		r.mu.Unlock()
	case *registerapi.RegistrationStatus:
		r.notified(req)
	}
	return resp, err
}

func (r *registrationWatch) notified(st *registerapi.RegistrationStatus) {
	r.registered(st.PluginRegistered)
	if st.PluginRegistered {
		r.closeOnce.Do(func() { close(r.done) })
		return
	}
	r.mu.Lock()
	r.refused = st.Error
	r.mu.Unlock()
}

// wait returns nil once the kubelet reports the driver registered, ctx's error when ctx
// ends first, or ErrNotRegistered with what the kubelet did when timeout passes first.
func (r *registrationWatch) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.refused != "":
		return fmt.Errorf("%w within %s: it refused: %s", ErrNotRegistered, timeout, r.refused)
	case r.asked:
		return fmt.Errorf("%w within %s: it asked for the driver's info but never reported the registration", ErrNotRegistered, timeout)
	default:
		return fmt.Errorf("%w within %s: it never called the registration socket (is --kubelet-registry-dir the kubelet's plugins_registry?)", ErrNotRegistered, timeout)
	}
}

// probeSockets calls the registration socket as the kubelet's plugin watcher does
// (GetInfo) and then the DRA socket it names (NodePrepareResources without claims).
func probeSockets(ctx context.Context, regSock string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, probeKey, "1")
	rc, err := grpc.NewClient("unix://"+regSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("registration socket %s: %w", regSock, err)
	}
	defer func() { _ = rc.Close() }()
	info, err := registerapi.NewRegistrationClient(rc).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return fmt.Errorf("GetInfo on registration socket %s: %w", regSock, err)
	}
	dc, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("DRA socket %s: %w", info.Endpoint, err)
	}
	defer func() { _ = dc.Close() }()
	if _, err := drapb.NewDRAPluginClient(dc).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{}); err != nil {
		return fmt.Errorf("NodePrepareResources on DRA socket %s: %w", info.Endpoint, err)
	}
	return nil
}
