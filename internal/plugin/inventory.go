package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Node labels the plugin sets (and removes when they stop being true).
const (
	LabelRDMA   = "ringcap.io/rdma"    // "true" when the node has at least one healthy device
	LabelRoCEv2 = "ringcap.io/roce-v2" // "true" when a healthy device has a RoCE v2 GID
)

// Inventory is what the plugin publishes about its node.
type Inventory struct {
	Status ringcapv1alpha1.RDMANodeStatus
	Labels map[string]string // "true" or "" (remove)
}

func (a *Inventory) equal(b *Inventory) bool {
	x, y := a.Status, b.Status
	x.LastScanTime, y.LastScanTime = nil, nil
	x.Conditions, y.Conditions = stripTimes(x.Conditions), stripTimes(y.Conditions)
	return reflect.DeepEqual(x, y) && reflect.DeepEqual(a.Labels, b.Labels)
}

func stripTimes(cs []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(cs))
	for i, c := range cs {
		c.LastTransitionTime = metav1.Time{}
		out[i] = c
	}
	return out
}

// InventorySink publishes the inventory (the API server in production).
type InventorySink interface {
	Publish(ctx context.Context, inv *Inventory) error
}

func (p *Plugin) buildInventory(devs []rdma.Device, skipped []rdma.Skipped) *Inventory {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	st := ringcapv1alpha1.RDMANodeStatus{LastScanTime: &now, PluginVersion: p.opts.Version, ContainerMemlock: p.containerMemlock}
	pools, poolOf, units := p.poolsStatus()
	st.Pools = pools
	h := nodeHealth{all: true}
	for _, d := range devs {
		rd, ds := deviceStatus(d, poolOf)
		if ds != nil {
			h.note(ds)
		}
		st.Devices = append(st.Devices, rd)
	}
	for _, s := range skipped {
		st.Skipped = append(st.Skipped, s.String())
	}
	st.Conditions = []metav1.Condition{inventoryReady(units, h.all, now)}
	return &Inventory{Status: st, Labels: h.labels()}
}

// poolsStatus describes each pool (units, healthy units, devices) and says
// which pool each device is in (the first that selects it) and how many units
// are advertised in all.
func (p *Plugin) poolsStatus() ([]ringcapv1alpha1.RDMAPool, map[string]*poolServer, int) {
	var pools []ringcapv1alpha1.RDMAPool
	poolOf := map[string]*poolServer{}
	units := 0
	for _, s := range p.pools {
		ps, _ := s.snapshot()
		pool := ringcapv1alpha1.RDMAPool{Resource: s.resource, Sharing: s.cfg.Sharing.Mode, Units: int32(len(ps.list))}
		for _, d := range ps.list {
			if d.Health == "Healthy" {
				pool.HealthyUnits++
			}
		}
		for name := range ps.devs {
			pool.Devices = append(pool.Devices, name)
			if _, ok := poolOf[name]; !ok {
				poolOf[name] = s
			}
		}
		sort.Strings(pool.Devices)
		units += len(ps.list)
		pools = append(pools, pool)
	}
	return pools, poolOf, units
}

// deviceStatus describes one device, with its pool's view of it (ds, nil when
// no pool selects it).
func deviceStatus(d rdma.Device, poolOf map[string]*poolServer) (ringcapv1alpha1.RDMADevice, *devState) {
	rd := ringcapv1alpha1.RDMADevice{
		Name: d.Name, NodeGUID: d.NodeGUID, NodeType: d.NodeType, Driver: d.Driver, PCIAddress: d.PCIAddress,
		Vendor: d.Vendor, DeviceID: d.DeviceID, FirmwareVersion: d.FirmwareVersion, CharDevices: d.CharDevices,
	}
	if d.NUMANode >= 0 {
		n := int32(d.NUMANode)
		rd.NUMANode = &n
	}
	var ds *devState
	if s := poolOf[d.Name]; s != nil {
		ps, _ := s.snapshot()
		if x, ok := ps.devs[d.Name]; ok {
			ds = &x
			rd.Pool, rd.Health, rd.HealthReason = s.resource, x.health(), x.reason
		}
	}
	for _, port := range d.Ports {
		rd.Ports = append(rd.Ports, portStatus(port, ds))
	}
	return rd, ds
}

// portStatus describes one port with its GID table and, on the port the
// pool uses, the GID it chose and why.
func portStatus(port rdma.Port, ds *devState) ringcapv1alpha1.RDMAPort {
	rp := ringcapv1alpha1.RDMAPort{
		Number: int32(port.Num), State: port.State, PhysState: port.PhysState, LinkLayer: port.LinkLayer,
		ActiveMTU: int32(port.ActiveMTU), Rate: port.Rate, Netdevs: port.Netdevs,
	}
	for _, g := range port.GIDs {
		g := g
		rp.GIDs = append(rp.GIDs, ringcapv1alpha1.RDMAGID{Index: int32(g.Index), GID: gidString(&g), Type: g.Type, Netdev: g.Netdev})
	}
	if ds != nil && ds.port.Num == port.Num {
		if ds.gid != nil {
			i := int32(ds.gid.Index)
			rp.ChosenGIDIndex = &i
		}
		rp.GIDReason = ds.gidReason
	}
	return rp
}

// nodeHealth sums up the pooled devices' health for the node's labels.
type nodeHealth struct {
	any, all, roce2 bool
}

func (h *nodeHealth) note(ds *devState) {
	h.any = h.any || ds.healthy
	h.all = h.all && ds.healthy
	h.roce2 = h.roce2 || (ds.healthy && ds.gid != nil && ds.gid.Type == rdma.GIDTypeRoCEv2)
}

func (h nodeHealth) labels() map[string]string {
	labels := map[string]string{LabelRDMA: "", LabelRoCEv2: ""}
	if h.any {
		labels[LabelRDMA] = "true"
	}
	if h.roce2 {
		labels[LabelRoCEv2] = "true"
	}
	return labels
}

// inventoryReady is the RDMANode's Ready condition.
func inventoryReady(units int, allHealthy bool, now metav1.Time) metav1.Condition {
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllDevicesHealthy",
		Message: fmt.Sprintf("%d units advertised, all healthy", units), LastTransitionTime: now}
	switch {
	case units == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NoDevices", "no RDMA device is selected by any pool"
	case !allHealthy:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "DevicesUnhealthy", "some devices are unhealthy (see devices[].healthReason)"
	}
	return cond
}

// RDMANodeResource is the RDMANode API resource.
var RDMANodeResource = schema.GroupVersionResource{Group: ringcapv1alpha1.GroupVersion.Group, Version: ringcapv1alpha1.GroupVersion.Version, Resource: "rdmanodes"}

// KubeSink publishes the inventory to the API server: the node's labels (merge patch)
// and the RDMANode named after the node (created when missing, status written through
// the status subresource; Ready keeps its lastTransitionTime while unchanged).
type KubeSink struct {
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	NodeName string
}

// Publish implements InventorySink.
func (k *KubeSink) Publish(ctx context.Context, inv *Inventory) error {
	if err := k.patchLabels(ctx, inv.Labels); err != nil {
		return err
	}
	res := k.Dynamic.Resource(RDMANodeResource)
	cur, err := res.Get(ctx, k.NodeName, metav1.GetOptions{})
	if err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("get RDMANode %s: %w", k.NodeName, err)
		}
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(ringcapv1alpha1.GroupVersion.String())
		obj.SetKind("RDMANode")
		obj.SetName(k.NodeName)
		if cur, err = res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create RDMANode %s: %w", k.NodeName, err)
		}
	}
	status := inv.Status
	keepTransitionTime(cur, &status)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("convert RDMANode status: %w", err)
	}
	if err := unstructured.SetNestedField(cur.Object, m, "status"); err != nil {
		return fmt.Errorf("set RDMANode status: %w", err)
	}
	if _, err := res.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update RDMANode %s status: %w", k.NodeName, err)
	}
	return nil
}

func (k *KubeSink) patchLabels(ctx context.Context, labels map[string]string) error {
	l := map[string]any{}
	for key, v := range labels {
		if v == "" {
			l[key] = nil // remove
		} else {
			l[key] = v
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l}})
	if err != nil {
		return fmt.Errorf("encode node label patch: %w", err)
	}
	if _, err := k.Client.CoreV1().Nodes().Patch(ctx, k.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %s: %w", k.NodeName, err)
	}
	return nil
}

// keepTransitionTime keeps the existing Ready condition's lastTransitionTime when its
// status did not change.
func keepTransitionTime(cur *unstructured.Unstructured, st *ringcapv1alpha1.RDMANodeStatus) {
	conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["type"] != "Ready" {
			continue
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == "Ready" && string(st.Conditions[i].Status) == cm["status"] {
				if ts, ok := cm["lastTransitionTime"].(string); ok {
					if t, err := time.Parse(time.RFC3339, ts); err == nil {
						st.Conditions[i].LastTransitionTime = metav1.NewTime(t)
					}
				}
			}
		}
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// readMemlock reads the memlock limit for the inventory once (a process's limit does not
// change); nil (not reported) when it cannot be read, which the operator treats as unknown.
func readMemlock(opts Options) *ringcapv1alpha1.MemlockLimit {
	read := opts.Memlock
	if read == nil {
		read = OwnMemlock
	}
	m, err := read()
	if err != nil {
		opts.Log.Error(err, "Memlock limit left out of the inventory")
		return nil
	}
	return m
}
