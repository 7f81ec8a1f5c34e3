package dra

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ringcap/ringcap/internal/linkmetrics"
)

// The driver exports the counters of each prepared claim's ports per pod and capture
// (ringcap_capture_link_increase_total), counted from when it prepared the claim and
// dropped when it unprepares it: a pod's own network namespace shows its device without
// counters, the driver's (the node's) has them. The pods are the claim's
// status.reservedFor; the capture is the claim's ringcap.io/capture label, else the pod's.
// In plugin.mode both the device plugin exports the same series for the pods holding its
// own devices only (the kubelet's PodResources API lists claims apart), and no device is
// both sides', so each capture's series are exported once.

// podLookupTimeout bounds reading one pod's capture label.
const podLookupTimeout = 5 * time.Second

// trackLinks sets the claim's holds: its devices' primary ports, for each pod it is
// reserved for. A claim already tracked keeps its baselines.
func (d *Driver) trackLinks(ctx context.Context, c *resourceapi.ResourceClaim, pc preparedClaim) {
	ports := d.claimPorts(pc)
	var holds []linkmetrics.Hold
	var pods []types.UID
	for _, ref := range c.Status.ReservedFor {
		if ref.APIGroup != "" || ref.Resource != "pods" {
			continue
		}
		pods = append(pods, ref.UID)
		h := linkmetrics.Holder{Namespace: c.Namespace, Pod: ref.Name, Capture: c.Labels[linkmetrics.LabelCapture]}
		if h.Capture == "" {
			h.Capture = d.podCapture(ctx, c.Namespace, ref.Name, ref.UID)
		}
		for _, p := range ports {
			holds = append(holds, linkmetrics.Hold{Holder: h, Port: p})
		}
	}
	d.links.Set(string(c.UID), holds)
	d.linksMu.Lock()
	d.claimPods[c.UID] = pods
	d.linksMu.Unlock()
}

// claimPorts are the ports the claim's containers are told to use (each device's primary
// port), of the devices still published.
func (d *Driver) claimPorts(pc preparedClaim) []linkmetrics.Port {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []linkmetrics.Port
	for _, a := range pc.Devices {
		if pd, ok := d.devices[a.Device]; ok {
			out = append(out, linkmetrics.Port{Device: pd.Dev.Name, Port: pd.Port.Num})
		}
	}
	return out
}

// podCapture is the pod's ringcap.io/capture label, read once per pod UID; "" without
// one, without a client, or when the pod cannot be read (read again at the next prepare
// or state check).
func (d *Driver) podCapture(ctx context.Context, namespace, name string, uid types.UID) string {
	d.linksMu.Lock()
	c, ok := d.podCaptures[uid]
	d.linksMu.Unlock()
	if ok || d.opts.Client == nil {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, podLookupTimeout)
	defer cancel()
	pod, err := d.opts.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && pod.UID != uid):
		c = ""
	case err != nil:
		d.log.V(1).Info("Cannot read a pod's capture label; read again later", "pod", namespace+"/"+name, "error", err.Error())
		return ""
	default:
		c = pod.Labels[linkmetrics.LabelCapture]
	}
	d.linksMu.Lock()
	d.podCaptures[uid] = c
	d.linksMu.Unlock()
	return c
}

// untrackLinks drops the claims' series and forgets the capture labels of the pods no
// tracked claim is reserved for any more.
func (d *Driver) untrackLinks(uids ...types.UID) {
	d.linksMu.Lock()
	defer d.linksMu.Unlock()
	for _, uid := range uids {
		d.links.Drop(string(uid))
		delete(d.claimPods, uid)
	}
	keep := map[types.UID]bool{}
	for _, pods := range d.claimPods {
		for _, p := range pods {
			keep[p] = true
		}
	}
	for p := range d.podCaptures {
		if !keep[p] {
			delete(d.podCaptures, p)
		}
	}
}

// syncLinks, at a state check, tracks the prepared claims the API still has that are not
// tracked (prepared before a restart, or by the other instance of a rolling update:
// counted from now) and drops the tracked claims no longer prepared.
func (d *Driver) syncLinks(ctx context.Context, present []*resourceapi.ResourceClaim) {
	d.mu.Lock()
	prepared := make(map[types.UID]preparedClaim, len(d.prepared))
	for uid, pc := range d.prepared {
		prepared[uid] = pc
	}
	d.mu.Unlock()
	tracked := map[string]bool{}
	for _, o := range d.links.Owners() {
		tracked[o] = true
		if _, ok := prepared[types.UID(o)]; !ok {
			d.untrackLinks(types.UID(o))
		}
	}
	for _, c := range present {
		if pc, ok := prepared[c.UID]; ok && !tracked[string(c.UID)] {
			d.trackLinks(ctx, c, pc)
		}
	}
}

// registerCaptureLinks registers the per-capture series; they are the driver's in every
// mode (the device plugin does not export claims' series).
func (d *Driver) registerCaptureLinks() error {
	if err := d.opts.Registry.Register(d.links); err != nil {
		return fmt.Errorf("register per-capture link counters: %w", err)
	}
	return nil
}
