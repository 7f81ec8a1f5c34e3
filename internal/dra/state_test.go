package dra

import (
	"context"
	"errors"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestGoneClaims: a prepared claim is gone only when the API says NotFound or has a
// claim of that name with another UID; every other answer keeps it.
func TestGoneClaims(t *testing.T) {
	gr := schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}
	answers := map[string]error{
		"internal":  apierrors.NewInternalError(errors.New("etcd down")),
		"timeout":   apierrors.NewTimeoutError("slow", 1),
		"forbidden": apierrors.NewForbidden(gr, "forbidden", errors.New("no")),
		"canceled":  context.Canceled,
	}
	cs := fake.NewClientset(
		&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "same", UID: "u-same"}},
		&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "recreated", UID: "u-new"}})
	cs.PrependReactor("get", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if err, ok := answers[a.(k8stesting.GetAction).GetName()]; ok {
			return true, nil, err
		}
		return false, nil, nil
	})
	d, err := New(Options{Roots: treeRoots(rxeTree), NodeName: node, CDIDir: t.TempDir(), Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	var claims []preparedClaim
	for _, n := range []string{"same", "recreated", "deleted", "internal", "timeout", "forbidden", "canceled"} {
		uid := types.UID("u-" + n)
		if n == "recreated" {
			uid = "u-old"
		}
		claims = append(claims, preparedClaim{UID: uid, Namespace: "ns", Name: n})
	}
	var gone []string
	goneClaims, _ := d.goneClaims(context.Background(), claims)
	for _, pc := range goneClaims {
		gone = append(gone, pc.Name)
	}
	if want := []string{"recreated", "deleted"}; !reflect.DeepEqual(gone, want) {
		t.Errorf("gone %v, want %v", gone, want)
	}
}
