package plugin

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// TestKubeSink publishes twice through fake API clients: the node gets the labels
// (and loses the one that turns false), the RDMANode is created once and its status
// follows, and Ready keeps its lastTransitionTime while its status is unchanged.
func TestKubeSink(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"keep": "me"}}})
	dc := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{RDMANodeResource: "RDMANodeList"})
	sink := &KubeSink{Client: cs, Dynamic: dc, NodeName: "node-1"}

	t0 := metav1.NewTime(time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC))
	idx := int32(1)
	inv := &Inventory{
		Labels: map[string]string{LabelRDMA: "true", LabelRoCEv2: "true"},
		Status: ringcapv1alpha1.RDMANodeStatus{
			Devices:    []ringcapv1alpha1.RDMADevice{{Name: "rxe0", Health: "Healthy", Ports: []ringcapv1alpha1.RDMAPort{{Number: 1, ChosenGIDIndex: &idx}}}},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllDevicesHealthy", LastTransitionTime: t0}},
		},
	}
	if err := sink.Publish(ctx, inv); err != nil {
		t.Fatal(err)
	}
	inv2 := *inv
	inv2.Labels = map[string]string{LabelRDMA: "true", LabelRoCEv2: ""}
	inv2.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllDevicesHealthy", LastTransitionTime: metav1.NewTime(t0.Add(time.Hour))}}
	inv2.Status.Devices = append(inv2.Status.Devices, ringcapv1alpha1.RDMADevice{Name: "rxe1", Health: "Unhealthy"})
	if err := sink.Publish(ctx, &inv2); err != nil {
		t.Fatal(err)
	}

	n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[LabelRDMA] != "true" || n.Labels["keep"] != "me" {
		t.Errorf("labels %v", n.Labels)
	}
	if _, ok := n.Labels[LabelRoCEv2]; ok {
		t.Errorf("roce-v2 label not removed: %v", n.Labels)
	}
	obj, err := dc.Resource(RDMANodeResource).Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got ringcapv1alpha1.RDMANode
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Devices) != 2 || got.Status.Devices[1].Name != "rxe1" || *got.Status.Devices[0].Ports[0].ChosenGIDIndex != 1 {
		t.Errorf("status %+v", got.Status)
	}
	if c := got.Status.Conditions; len(c) != 1 || !c[0].LastTransitionTime.Equal(&t0) {
		t.Errorf("conditions %+v (want lastTransitionTime kept at %v)", c, t0)
	}
}
