package controller

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// receiverOf returns the pod's receiver container.
func receiverOf(t *testing.T, pod *corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if c.Name == ringcapv1.ReceiverContainerName {
			return c
		}
	}
	t.Fatal("no receiver container")
	return corev1.Container{}
}

// argAfter returns the argument after flag ("" when flag is absent).
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func envNamed(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestBuildPodNetworkModes(t *testing.T) {
	type want struct {
		hostNetwork             bool
		dnsPolicy               corev1.DNSPolicy
		listen, listenOn, iface string
		allowed, metrics        string
		hostPorts               []int32
		networksAnnotation      string
		podIPEnv, netStatusEnv  bool
	}
	tests := []struct {
		name string
		net  ringcapv1.NetworkSpec
		want want
	}{
		{"Pod (the default): every address of the pod, any sender, no host ports", ringcapv1.NetworkSpec{},
			want{listen: "0.0.0.0:18515", metrics: ":9100"}},
		{"Pod with an allowlist", ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModePod, AllowedSenders: []ringcapv1.CIDR{"10.88.0.0/16", "10.1.0.0/24"}},
			want{listen: "0.0.0.0:18515", metrics: ":9100", allowed: "10.88.0.0/16,10.1.0.0/24"}},
		{"Host: node network, the RDMA netdev's address, host ports, listening subnet only", ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeHost},
			want{hostNetwork: true, dnsPolicy: corev1.DNSClusterFirstWithHostNet, listen: ":18515", listenOn: "rdma", allowed: "listen-subnet",
				metrics: "$(POD_IP):9100", hostPorts: []int32{18515, 9100}, podIPEnv: true}},
		{"Host with an allowlist", ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeHost, AllowedSenders: []ringcapv1.CIDR{"198.18.0.1/32"}},
			want{hostNetwork: true, dnsPolicy: corev1.DNSClusterFirstWithHostNet, listen: ":18515", listenOn: "rdma", allowed: "198.18.0.1/32",
				metrics: "$(POD_IP):9100", hostPorts: []int32{18515, 9100}, podIPEnv: true}},
		{"Attachment in the capture's namespace", ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeAttachment, Attachment: "macvlan-conf"},
			want{listen: ":18515", listenOn: "attachment=obs/macvlan-conf", allowed: "listen-subnet", metrics: ":9100",
				networksAnnotation: "macvlan-conf", netStatusEnv: true}},
		{"Attachment in another namespace, interface named", ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeAttachment, Attachment: "net/sriov", Interface: "data0"},
			want{listen: ":18515", listenOn: "attachment=net/sriov", iface: "data0", allowed: "listen-subnet", metrics: ":9100",
				networksAnnotation: "net/sriov", netStatusEnv: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Spec.Network = tc.net
			pod := BuildPod(rc, DefaultPodOptions())
			c := receiverOf(t, pod)
			if pod.Spec.HostNetwork != tc.want.hostNetwork || pod.Spec.DNSPolicy != tc.want.dnsPolicy {
				t.Errorf("hostNetwork %v dnsPolicy %q, want %v %q", pod.Spec.HostNetwork, pod.Spec.DNSPolicy, tc.want.hostNetwork, tc.want.dnsPolicy)
			}
			for flag, w := range map[string]string{"--listen": tc.want.listen, "--listen-on": tc.want.listenOn, "--listen-interface": tc.want.iface,
				"--allowed-senders": tc.want.allowed, "--metrics-addr": tc.want.metrics} {
				if got := argAfter(c.Args, flag); got != w {
					t.Errorf("%s %q, want %q (args %q)", flag, got, w, c.Args)
				}
			}
			var hostPorts []int32
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					if p.HostPort != p.ContainerPort {
						t.Errorf("port %s: hostPort %d != containerPort %d", p.Name, p.HostPort, p.ContainerPort)
					}
					hostPorts = append(hostPorts, p.HostPort)
				}
			}
			if !slices.Equal(hostPorts, tc.want.hostPorts) {
				t.Errorf("host ports %v, want %v", hostPorts, tc.want.hostPorts)
			}
			if got := pod.Annotations[ringcapv1.AnnotationNetworks]; got != tc.want.networksAnnotation {
				t.Errorf("networks annotation %q, want %q", got, tc.want.networksAnnotation)
			}
			if e := envNamed(c, EnvPodIP); (e != nil) != tc.want.podIPEnv || (e != nil && e.ValueFrom.FieldRef.FieldPath != "status.podIP") {
				t.Errorf("%s env %+v, want present=%v from status.podIP", EnvPodIP, e, tc.want.podIPEnv)
			}
			e := envNamed(c, EnvNetworkStatus)
			if (e != nil) != tc.want.netStatusEnv || (e != nil && !strings.Contains(e.ValueFrom.FieldRef.FieldPath, ringcapv1.AnnotationNetworkStatus)) {
				t.Errorf("%s env %+v, want present=%v from the network-status annotation", EnvNetworkStatus, e, tc.want.netStatusEnv)
			}
			// Nothing else is loosened: the receiver stays unprivileged in every mode.
			if sc := c.SecurityContext; *sc.Privileged || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "IPC_LOCK" {
				t.Errorf("receiver security context %+v", sc)
			}
			// The running configuration reads the network back from the pod.
			run := RunningConfig(pod, nil)
			if w := networkWords(tc.net, rc.Namespace); run.Network != w {
				t.Errorf("running network %q, want %q", run.Network, w)
			}
		})
	}
}

// networkWords is what status.running.network says for a network spec.
func networkWords(n ringcapv1.NetworkSpec, ns string) string {
	switch n.Mode {
	case ringcapv1.NetworkModeHost:
		return "Host"
	case ringcapv1.NetworkModeAttachment:
		a := n.Attachment
		if !strings.Contains(a, "/") {
			a = ns + "/" + a
		}
		if n.Interface != "" {
			return "Attachment " + a + " interface " + n.Interface
		}
		return "Attachment " + a
	}
	return "Pod"
}

func TestPendingChangeNetwork(t *testing.T) {
	rc := defaulted("c")
	rc.Generation = 1
	pod := BuildPod(rc, DefaultPodOptions())
	rc.Generation = 2
	rc.Spec.Network = ringcapv1.NetworkSpec{Mode: ringcapv1.NetworkModeHost, AllowedSenders: []ringcapv1.CIDR{"198.18.0.0/24"}}
	msg := pendingChange(rc, RunningConfig(pod, nil))
	for _, w := range []string{"network Pod -> Host", "network allowedSenders any -> 198.18.0.0/24"} {
		if !strings.Contains(msg, w) {
			t.Errorf("pending change %q does not say %q", msg, w)
		}
	}
}
