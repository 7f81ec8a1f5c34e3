//go:build envtest

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// presenceSpec is a SPEAD capture with ring key ring and udp.presenceKey presence.
func presenceSpec(ring, presence string) string {
	r := ""
	if ring != "" {
		r = `ring: {key: "` + ring + `"}, `
	}
	return `{` + r + `receiver: {protocol: SPEAD, udp: {ports: [7148], presenceKey: ` + presence + `}, ` + speadOK + `}, readers: [{name: r}]}`
}

// udp.presenceKey is a hex key that differs from ring.key however either is written.
func TestPresenceKeyRules(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct{ ring, presence, want string }{
		{"", `"dada"`, "must differ from spec.ring.key"},
		{"dada", `"0xDADA"`, "must differ from spec.ring.key"},
		{"0x0000eada", `"EADA"`, "must differ from spec.ring.key"},
		{"eada", `"0Xeada"`, "must differ from spec.ring.key"},
		{"", `"xyz"`, "must be a hex SysV key"},
		{"", `"0x0"`, "must not be 0"},
		{"", `"80000000"`, "at most 0x7fffffff"},
		{"", `""`, "spec.receiver.udp.presenceKey"},
		{"", `0xeada`, "spec.receiver.udp.presenceKey"},
	} {
		spec := presenceSpec(tc.ring, tc.presence)
		obj := object(t, fmt.Sprintf("presence-invalid-%d", i), spec)
		err := env.Client.Create(ctx, obj)
		if err == nil {
			_ = env.Client.Delete(ctx, obj)
			t.Errorf("spec %s was accepted", spec)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("spec %s: want an Invalid error mentioning %q, got %v", spec, tc.want, err)
		}
	}
	for i, tc := range []struct{ ring, presence string }{{"", `"eada"`}, {"dada", `"0x1dadc"`}, {"0xdada", `"fada"`}, {"7fffffff", `"0x7ffffffd"`}} {
		spec := presenceSpec(tc.ring, tc.presence)
		if err := env.Client.Create(ctx, object(t, fmt.Sprintf("presence-valid-%d", i), spec)); err != nil {
			t.Errorf("valid spec %s rejected: %v", spec, err)
		}
	}
}
