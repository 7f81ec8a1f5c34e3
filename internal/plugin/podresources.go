package plugin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/ringcap/ringcap/internal/linkmetrics"
)

// DefaultPodResourcesSocket is where the kubelet serves its PodResources API.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResourcesTimeout bounds one List call.
const podResourcesTimeout = 5 * time.Second

// podResources asks the kubelet's PodResources API which pods hold which device IDs.
type podResources struct {
	conn   *grpc.ClientConn
	client podresourcesapi.PodResourcesListerClient
}

// dialPodResources makes a client of the socket; it connects at the first call, so a
// socket that is missing now is not an error here.
func dialPodResources(socket string) (*podResources, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("PodResources API client for %s: %w", socket, err)
	}
	return &podResources{conn: conn, client: podresourcesapi.NewPodResourcesListerClient(conn)}, nil
}

// list is every pod the kubelet has resources for.
func (r *podResources) list(ctx context.Context) ([]*podresourcesapi.PodResources, error) {
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	resp, err := r.client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list pod resources: %w", err)
	}
	return resp.GetPodResources(), nil
}

func (r *podResources) close() { _ = r.conn.Close() }

// unitPorts are the ports of the device IDs the plugin advertises, by resource name and
// device ID: the port each unit's pods are told to use.
type unitPorts map[string]map[string]linkmetrics.Port

// heldPorts are the ports each pod (by namespace/name) holds through the plugin's
// device IDs, from a PodResources List answer; the pods' other resources (other device
// plugins', DRA claims) are not looked at. Each pod's ports are listed once.
func heldPorts(pods []*podresourcesapi.PodResources, units unitPorts) map[string][]linkmetrics.Hold {
	out := map[string][]linkmetrics.Hold{}
	for _, pod := range pods {
		key := pod.GetNamespace() + "/" + pod.GetName()
		seen := map[linkmetrics.Port]bool{}
		for _, c := range pod.GetContainers() {
			for _, d := range c.GetDevices() {
				ports, ok := units[d.GetResourceName()]
				if !ok {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					port, ok := ports[id]
					if !ok || seen[port] {
						continue
					}
					seen[port] = true
					out[key] = append(out[key], linkmetrics.Hold{
						Holder: linkmetrics.Holder{Namespace: pod.GetNamespace(), Pod: pod.GetName()}, Port: port})
				}
			}
		}
	}
	return out
}

// unitPorts maps every pool's device IDs to their devices' ports, as the last scan has them.
func (p *Plugin) unitPorts() unitPorts {
	out := unitPorts{}
	for _, s := range p.pools {
		ps, _ := s.snapshot()
		m := map[string]linkmetrics.Port{}
		for id, u := range ps.units {
			if d, ok := ps.devs[u.dev]; ok {
				m[id] = linkmetrics.Port{Device: u.dev, Port: d.port.Num}
			}
		}
		out[s.resource] = m
	}
	return out
}

// allocatedPorts are the ports of the device IDs an Allocate request gave out.
func allocatedPorts(st *poolState, req *pluginapi.AllocateRequest) []linkmetrics.Port {
	var out []linkmetrics.Port
	for _, cr := range req.ContainerRequests {
		for _, id := range cr.DevicesIds {
			if u, ok := st.units[id]; ok {
				if d, ok := st.devs[u.dev]; ok {
					out = append(out, linkmetrics.Port{Device: u.dev, Port: d.port.Num})
				}
			}
		}
	}
	return out
}
