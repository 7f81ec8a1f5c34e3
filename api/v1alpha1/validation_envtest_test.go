//go:build envtest

package v1alpha1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/capture/headerrules"
)

var env *testenv.Env

const ns = "validation"

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintln(os.Stderr, "create namespace:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
		code = 1
	}
	os.Exit(code)
}

// object builds a RingCapture from a YAML spec, as a user's manifest would be sent
// (unstructured, so values the Go types cannot hold reach the API server too).
func object(t *testing.T, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("bad test YAML %q: %v", specYAML, err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(ringcapv1.GroupVersion.String())
	u.SetKind("RingCapture")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestInvalidRingCapturesRejected(t *testing.T) {
	tests := []struct {
		name, spec string
		// want are substrings of the API server's message: the field's path and what is wrong.
		want []string
		// avoid are substrings the message must not have (internals a user cannot act on).
		avoid []string
	}{
		{"key zero", `{ring: {key: "0x0"}}`, []string{"spec.ring.key", "must not be 0"}, nil},
		{"key not hex", `{ring: {key: "xyz"}}`, []string{"spec.ring.key", "must be a hex SysV key"}, nil},
		{"key above 0x7fffffff", `{ring: {key: "80000000"}}`, []string{"spec.ring.key", "at most 0x7fffffff"}, nil},
		{"key too long", `{ring: {key: "0x1234567890"}}`, []string{"spec.ring.key"}, nil},
		{"key above 0x7fffffff with upper-case X", `{ring: {key: "0X80000000"}}`, []string{"spec.ring.key", "at most 0x7fffffff"}, nil},
		{"key zero with upper-case X", `{ring: {key: "0X0"}}`, []string{"spec.ring.key", "must not be 0"}, nil},
		// YAML 1.1 (kubectl's) reads an unquoted 0xdada as the integer 56026.
		{"key unquoted hex", `{ring: {key: 0xdada}}`, []string{"spec.ring.key", "must be a string: quote it"}, []string{"must be of type string"}},
		{"key unquoted decimal", `{ring: {key: 1234}}`, []string{"spec.ring.key", "must be a string: quote it"}, []string{"must be of type string"}},
		{"block too small", `{ring: {blockBytes: 1000}}`, []string{"spec.ring.blockBytes", "greater than or equal to 4096"}, nil},
		{"one block", `{ring: {blocks: 1}}`, []string{"spec.ring.blocks", "greater than or equal to 2"}, nil},
		{"EFA in Host mode", `{network: {mode: Host}, receiver: {transport: OFI, ofiProvider: efa, port: 20515, metricsPort: 20100}, readers: [{name: r}]}`,
			[]string{"spec.network.mode", "an EFA (spec.receiver.ofiProvider efa) has no RoCE GID"}, nil},
		{"nine readers", `{ring: {readers: 9, hostIPC: true}}`, []string{"spec.ring.readers", "less than or equal to 8"}, nil},
		{"header block too small", `{ring: {headerBlockBytes: 512}}`, []string{"spec.ring.headerBlockBytes"}, nil},
		{"ring above 64 GiB", `{ring: {blockBytes: 4294967296, blocks: 17}, receiver: {messageBytes: 65536}}`,
			[]string{"spec.ring.blocks", "must not exceed 64 GiB"}, nil},
		{"huge pages need 2 MiB blocks", `{ring: {hugePages: true, blockBytes: 1048576}}`,
			[]string{"spec.ring.blockBytes", "multiple of 2 MiB"}, nil},
		{"whole ring needs page-multiple blocks", `{ring: {blockBytes: 6000}, receiver: {memoryRegistration: WholeRing, messageBytes: 1000}}`,
			[]string{"spec.ring.blockBytes", "multiple of 4096 when spec.receiver.memoryRegistration is WholeRing"}, nil},
		{"message does not divide block", `{ring: {blockBytes: 100000}, receiver: {messageBytes: 65536}}`,
			[]string{"spec.receiver.messageBytes", "must divide spec.ring.blockBytes"}, nil},
		{"zero queue pairs", `{receiver: {queuePairs: 0}}`, []string{"spec.receiver.queuePairs", "greater than or equal to 1"}, nil},
		{"65 queue pairs", `{receiver: {queuePairs: 65}}`, []string{"spec.receiver.queuePairs", "less than or equal to 64"}, nil},
		{"unknown mode", `{receiver: {mode: Read}}`, []string{"spec.receiver.mode", "Unsupported value"}, nil},
		{"unknown memory registration", `{receiver: {memoryRegistration: Huge}}`, []string{"spec.receiver.memoryRegistration", "Unsupported value"}, nil},
		{"port out of range", `{receiver: {port: 70000}}`, []string{"spec.receiver.port"}, nil},
		{"gid index out of range", `{receiver: {gidIndex: 256}}`, []string{"spec.receiver.gidIndex"}, nil},
		{"receive depth zero", `{receiver: {receiveDepth: 0}}`, []string{"spec.receiver.receiveDepth"}, nil},
		{"resource name without domain", `{receiver: {resourceName: rdma}}`, []string{"spec.receiver.resourceName", "domain-prefixed"}, nil},
		{"stop after bytes without bytes", `{receiver: {stop: {after: Bytes}}}`,
			[]string{"spec.receiver.stop.bytes", "must be set exactly when receiver.stop.after is Bytes"}, nil},
		{"stop bytes without after", `{receiver: {stop: {bytes: 100}}}`, []string{"spec.receiver.stop.bytes"}, nil},
		{"stop duration malformed", `{receiver: {stop: {after: Duration, duration: "ten minutes"}}}`, []string{"spec.receiver.stop.duration"}, nil},
		{"stop duration zero", `{receiver: {stop: {after: Duration, duration: "0s"}}}`, []string{"spec.receiver.stop.duration", "must be positive"}, nil},
		{"stop duration in days", `{receiver: {stop: {after: Duration, duration: "1d"}}}`,
			[]string{"spec.receiver.stop.duration", "such as 90s, 10m or 1h30m", "no days"}, []string{"conversion", "proto", "compilation", "evaluation"}},
		{"port equal to the default metrics port", `{receiver: {port: 9100}}`,
			[]string{"spec.receiver.metricsPort", "must differ from receiver.port"}, nil},
		{"metrics port equal to the default port", `{receiver: {metricsPort: 18515}}`,
			[]string{"spec.receiver.metricsPort", "must differ from receiver.port"}, nil},
		{"port equal to metrics port", `{receiver: {port: 8000, metricsPort: 8000}}`,
			[]string{"spec.receiver.metricsPort", "must differ from receiver.port"}, nil},
		{"no reader container for the default reader slot", `{}`,
			[]string{"spec.ring.readers", "more reader slots than spec.readers has containers", "own IPC namespace", "spec.ring.hostIPC"}, nil},
		{"two reader slots, one reader container", `{ring: {readers: 2}, readers: [{name: a}]}`,
			[]string{"spec.ring.readers", "more reader slots than spec.readers has containers"}, nil},
		{"hostIPC false says nothing else takes the slot", `{ring: {readers: 3, hostIPC: false}, readers: [{name: a}, {name: b}]}`,
			[]string{"spec.ring.readers", "more reader slots than spec.readers has containers"}, nil},
		{"unknown stop condition", `{receiver: {stop: {after: Forever}}}`, []string{"spec.receiver.stop.after", "Unsupported value"}, nil},
		{"reader named receiver", `{readers: [{name: receiver, args: [ring, read]}]}`,
			[]string{"spec.readers[0].name", "must not be receiver"}, nil},
		{"reader name not a DNS label", `{readers: [{name: Reader_1}]}`, []string{"spec.readers[0].name"}, nil},
		{"duplicate reader names", `{ring: {readers: 2}, readers: [{name: a}, {name: a}]}`, []string{"spec.readers[1]", "Duplicate value"}, nil},
		{"more readers than slots", `{ring: {readers: 1}, readers: [{name: a}, {name: b}]}`,
			[]string{"spec.readers", "more containers than spec.ring.readers"}, nil},
		{"device class and claim template", `{receiver: {deviceClassName: ringcap-rdma, resourceClaimTemplateName: rdma-port}, readers: [{name: r}]}`,
			[]string{"spec.receiver.resourceClaimTemplateName", "at most one of deviceClassName and resourceClaimTemplateName"}, nil},
		{"selector without device class", `{receiver: {selector: 'device.attributes["ringcap.io"].netdev == "eth1"'}, readers: [{name: r}]}`,
			[]string{"spec.receiver.selector", "needs receiver.deviceClassName"}, nil},
		{"selector with claim template", `{receiver: {resourceClaimTemplateName: rdma-port, selector: "true"}, readers: [{name: r}]}`,
			[]string{"spec.receiver.selector", "needs receiver.deviceClassName"}, nil},
		{"extended resource name with device class", `{receiver: {deviceClassName: ringcap-rdma, resourceName: example.com/roce}, readers: [{name: r}]}`,
			[]string{"spec.receiver.resourceName", "leave it unset when the device comes through a claim"}, nil},
		{"extended resource name with claim template", `{receiver: {resourceClaimTemplateName: rdma-port, resourceName: example.com/roce}, readers: [{name: r}]}`,
			[]string{"spec.receiver.resourceName", "leave it unset"}, nil},
		{"rdma resource requested beside a claim", `{receiver: {deviceClassName: ringcap-rdma, resources: {limits: {ringcap.io/rdma: "1"}}}, readers: [{name: r}]}`,
			[]string{"spec.receiver.resources", "must not request ringcap.io/rdma"}, nil},
		{"device class not a DNS name", `{receiver: {deviceClassName: Ringcap_RDMA}, readers: [{name: r}]}`,
			[]string{"spec.receiver.deviceClassName"}, nil},
		{"claim template not a DNS name", `{receiver: {resourceClaimTemplateName: "rdma port"}, readers: [{name: r}]}`,
			[]string{"spec.receiver.resourceClaimTemplateName"}, nil},
		{"empty selector", `{receiver: {deviceClassName: ringcap-rdma, selector: ""}, readers: [{name: r}]}`,
			[]string{"spec.receiver.selector"}, nil},
		{"template and configmap", `{ring: {header: {template: "TELESCOPE Parkes", configMapRef: {name: hdr}}}}`,
			[]string{"spec.ring.header", "at most one of template and configMapRef"}, nil},
		{"header key lower case", `{ring: {header: {values: {telescope: Parkes}}}}`,
			[]string{"spec.ring.header.values", "upper-case PSRDADA header keys"}, nil},
		{"header value with newline", `{ring: {header: {values: {SOURCE: "a\nb"}}}}`,
			[]string{"spec.ring.header.values", "one printable ASCII word"}, nil},
		{"template longer than header block", `{ring: {header: {template: "` + strings.Repeat("X", 5000) + `"}}}`,
			[]string{"spec.ring.header.template", "shorter than ring.headerBlockBytes"}, nil},
		{"unknown pull policy", `{images: {pullPolicy: Sometimes}}`, []string{"spec.images.pullPolicy", "Unsupported value"}, nil},
		{"unknown network mode", `{network: {mode: Bridge}}`, []string{"spec.network.mode", "Unsupported value"}, nil},
		{"attachment without Attachment mode", `{network: {mode: Host, attachment: macvlan-conf}}`,
			[]string{"spec.network.attachment", "must be set exactly when network.mode is Attachment"}, nil},
		{"Attachment mode without attachment", `{network: {mode: Attachment}}`,
			[]string{"spec.network.attachment", "must be set exactly when network.mode is Attachment"}, nil},
		{"interface in Host mode", `{network: {mode: Host, interface: eth1}}`,
			[]string{"spec.network.interface", "only in Attachment mode"}, nil},
		{"attachment not a name", `{network: {mode: Attachment, attachment: "Macvlan Conf"}}`, []string{"spec.network.attachment"}, nil},
		{"interface name too long", `{network: {mode: Attachment, attachment: m, interface: abcdefghijklmnop}}`, []string{"spec.network.interface"}, nil},
		{"interface name with a slash", `{network: {mode: Attachment, attachment: m, interface: "a/b"}}`, []string{"spec.network.interface"}, nil},
		{"allowed sender not a CIDR", `{network: {allowedSenders: ["198.18.0.7"]}}`,
			[]string{"spec.network.allowedSenders[0]", "must be CIDRs such as 198.18.0.0/24"}, nil},
		{"allowed sender prefix too long", `{network: {allowedSenders: ["10.0.0.0/8", "198.18.0.0/33"]}}`,
			[]string{"spec.network.allowedSenders[1]", "must be CIDRs"}, nil},
		{"unknown transport", `{receiver: {transport: UCX}}`, []string{"spec.receiver.transport", "Unsupported value", `"Verbs"`, `"OFI"`}, nil},
		{"ofi provider with the default transport", `{receiver: {ofiProvider: efa}}`,
			[]string{"spec.receiver.ofiProvider", "only for receiver.transport OFI"}, nil},
		{"ofi provider with transport Verbs", `{receiver: {transport: Verbs, ofiProvider: "tcp;ofi_rxm"}}`,
			[]string{"spec.receiver.ofiProvider", "only for receiver.transport OFI"}, nil},
		{"ofi provider not a provider name", `{receiver: {transport: OFI, ofiProvider: "tcp; ofi_rxm"}}`,
			[]string{"spec.receiver.ofiProvider", "should match"}, nil},
		{"ofi provider empty", `{receiver: {transport: OFI, ofiProvider: ""}}`, []string{"spec.receiver.ofiProvider"}, nil},
		{"gid index with transport OFI", `{receiver: {transport: OFI, ofiProvider: efa, gidIndex: 3}}`,
			[]string{"spec.receiver.gidIndex", "verbs setting", "transport OFI"}, nil},
		{"privileged port in Host mode", `{network: {mode: Host}, receiver: {port: 900}}`,
			[]string{"spec.receiver.port", "at least 1024 when spec.network.mode is Host"}, nil},
		{"privileged metrics port in Host mode", `{network: {mode: Host}, receiver: {metricsPort: 80}}`,
			[]string{"spec.receiver.port", "at least 1024 when spec.network.mode is Host", "CAP_NET_BIND_SERVICE"}, nil},
		// Only the four sources are in the schema: another one is pruned as an unknown field
		// (refused as one with kubectl's strict field validation, TestVolumeSourceOutsideSchema)
		// and leaves the volume with no source, which names the sources allowed.
		{"secret volume", `{volumes: [{name: s, secret: {secretName: x}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source, one of persistentVolumeClaim, hostPath, nfs or emptyDir", "secret, configMap or csi are not allowed"}, nil},
		{"configMap volume", `{volumes: [{name: c, configMap: {name: x}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source, one of persistentVolumeClaim, hostPath, nfs or emptyDir"}, nil},
		{"csi volume", `{volumes: [{name: c, csi: {driver: x}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source, one of persistentVolumeClaim, hostPath, nfs or emptyDir"}, nil},
		{"ephemeral volume", `{volumes: [{name: e, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source, one of persistentVolumeClaim, hostPath, nfs or emptyDir"}, nil},
		{"volume without a source", `{volumes: [{name: v}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source"}, nil},
		{"volume with two allowed sources", `{volumes: [{name: v, emptyDir: {}, hostPath: {path: /data}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0]", "exactly one source"}, nil},
		{"two volumes, the second with no source", `{volumes: [{name: a, nfs: {server: nfs.example.org, path: /export}}, {name: b}], readers: [{name: r}]}`,
			[]string{"spec.volumes[1]", "exactly one source"}, []string{"spec.volumes[0]"}},
		{"volume named like the operator's", `{volumes: [{name: ringcap-header, emptyDir: {}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0].name", "must not start with ringcap-"}, nil},
		{"volume name not a DNS label", `{volumes: [{name: Data_1, emptyDir: {}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0].name", "should match"}, nil},
		{"volume name too long", `{volumes: [{name: ` + strings.Repeat("a", 64) + `, emptyDir: {}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0].name", "more than 63"}, nil},
		{"hostPath without a path", `{volumes: [{name: h, hostPath: {type: Directory}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[0].hostPath.path", "Required value"}, nil},
		{"duplicate volume names", `{volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}], readers: [{name: r}]}`,
			[]string{"spec.volumes[1]", "Duplicate value"}, nil},
		{"relative mount path", `{volumes: [{name: data, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: data, mountPath: data}]}]}`,
			[]string{"spec.readers[0].volumeMounts", "must be an absolute path"}, nil},
		{"mount over /dev/shm", `{volumes: [{name: data, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: data, mountPath: /dev/shm}]}]}`,
			[]string{"spec.readers[0].volumeMounts", "must not be /dev or under it"}, nil},
		{"mount over /dev", `{volumes: [{name: data, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: data, mountPath: "/dev/"}]}]}`,
			[]string{"spec.readers[0].volumeMounts", "must not be /dev or under it"}, nil},
		{"mount over the operator's /etc/ringcap", `{volumes: [{name: data, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: data, mountPath: /etc/ringcap/header}]}]}`,
			[]string{"spec.readers[0].volumeMounts", "nor /etc/ringcap"}, nil},
		{"two mounts at one path", `{volumes: [{name: a, emptyDir: {}}, {name: b, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: a, mountPath: /data}, {name: b, mountPath: /data}]}]}`,
			[]string{"spec.readers[0].volumeMounts[1]", "Duplicate value"}, nil},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, fmt.Sprintf("invalid-%d", i), tc.spec)
			err := env.Client.Create(ctx, obj)
			if err == nil {
				_ = env.Client.Delete(ctx, obj)
				t.Fatalf("spec %s was accepted", tc.spec)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("spec %s: want an Invalid error, got %v", tc.spec, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("spec %s: error does not mention %q:\n%v", tc.spec, w, err)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(err.Error(), a) {
					t.Errorf("spec %s: error mentions %q:\n%v", tc.spec, a, err)
				}
			}
		})
	}
	if len(tests) < 15 {
		t.Fatalf("only %d invalid cases", len(tests))
	}
}

func TestDefaultsApplied(t *testing.T) {
	ctx := context.Background()
	obj := object(t, "defaults", `{readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create empty RingCapture: %v", err)
	}
	var rc ringcapv1.RingCapture
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	r, rx := rc.Spec.Ring, rc.Spec.Receiver
	checks := []struct {
		field     string
		got, want any
	}{
		{"ring.key", r.Key, "dada"},
		{"ring.blockBytes", r.BlockBytes, int64(524288)},
		{"ring.blocks", r.Blocks, int64(4)},
		{"ring.readers", r.Readers, int32(1)},
		{"ring.headerBlockBytes", r.HeaderBlockBytes, int64(4096)},
		{"ring.lockMemory", r.LockMemory, false},
		{"ring.hugePages", r.HugePages, false},
		{"ring.hostIPC", r.HostIPC, false},
		{"receiver.queuePairs", rx.QueuePairs, int32(4)},
		{"receiver.mode", rx.Mode, ringcapv1.TransferModeSend},
		{"receiver.memoryRegistration", rx.MemoryRegistration, ringcapv1.MemoryRegistrationAuto},
		{"receiver.port", rx.Port, int32(18515)},
		{"receiver.metricsPort", rx.MetricsPort, int32(9100)},
		{"receiver.messageBytes", rx.MessageBytes, int64(65536)},
		{"receiver.receiveDepth", rx.ReceiveDepth, int32(128)},
		{"receiver.resourceName", rx.ResourceName, "ringcap.io/rdma"},
		{"receiver.stop.after", rx.Stop.After, ringcapv1.StopNever},
		{"receiver.transport", rx.Transport, ringcapv1.TransportVerbs},
		{"receiver.ofiProvider", rx.OFIProvider, ""},
		{"network.mode", rc.Spec.Network.Mode, ringcapv1.NetworkModePod},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.field, c.got, c.want)
		}
	}

	// A header ConfigMap reference defaults its key.
	obj = object(t, "defaults-header", `{ring: {header: {configMapRef: {name: hdr}}}, readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	if k := rc.Spec.Ring.Header.ConfigMapRef.Key; k != "header" {
		t.Errorf("default ring.header.configMapRef.key = %q, want header", k)
	}
}

func TestValidRingCapturesAccepted(t *testing.T) {
	ctx := context.Background()
	for i, spec := range []string{
		`{ring: {key: "0xEADA", blockBytes: 8388608, blocks: 8, hugePages: true, lockMemory: true}, receiver: {mode: Write, memoryRegistration: WholeRing, queuePairs: 64}, readers: [{name: r}]}`,
		`{ring: {key: "7fffffff"}, receiver: {memoryRegistration: PerBlock, stop: {after: Duration, duration: "1h30m"}}, readers: [{name: r}]}`,
		`{ring: {readers: 2, header: {template: "TELESCOPE Parkes\n", values: {SOURCE: J0437-4715}}}, readers: [{name: dbdisk, image: "psrdada:1", args: [dada_dbdisk, -k, dada]}, {name: verify}]}`,
		`{receiver: {stop: {after: Bytes, bytes: 1073741824}, gidIndex: 3, resourceName: example.com/roce}, readers: [{name: r}]}`,
		`{ring: {key: "0XDADA"}, readers: [{name: r}]}`,
		// As many reader slots as the ring holds (PSRDADA's IPCBUF_READERS), each with its container.
		`{ring: {readers: 8}, readers: [{name: r1}, {name: r2}, {name: r3}, {name: r4}, {name: r5}, {name: r6}, {name: r7}, {name: r8}]}`,
		`{network: {mode: Host, allowedSenders: ["198.18.0.0/24", "2001:db8::/32", "10.1.2.3/32"]}, ring: {hostIPC: true}, readers: [{name: r}]}`,
		`{network: {mode: Attachment, attachment: "data/macvlan-conf", interface: net1}, readers: [{name: r}]}`,
		`{network: {mode: Attachment, attachment: sriov.roce}, receiver: {port: 20000, metricsPort: 20001}, readers: [{name: r}]}`,
		`{network: {mode: Pod, allowedSenders: ["0.0.0.0/0"]}, receiver: {port: 80, metricsPort: 81}, readers: [{name: r}]}`,
		`{ring: {key: "0X7E50"}, receiver: {stop: {after: Duration, duration: "1.5h"}, port: 9100, metricsPort: 9101}, readers: [{name: r}]}`,
		// The device through a claim: a class with or without a selector, or a named template.
		`{receiver: {deviceClassName: ringcap-roce-v2, selector: 'device.attributes["ringcap.io"].netdev == "eth1"'}, readers: [{name: r}]}`,
		`{receiver: {deviceClassName: ringcap-rdma, resources: {requests: {cpu: "1"}, limits: {memory: 1Gi}}}, readers: [{name: r}]}`,
		`{receiver: {resourceClaimTemplateName: rdma-port, resourceName: ringcap.io/rdma}, readers: [{name: r}]}`,
		`{receiver: {transport: OFI, ofiProvider: efa, mode: Write}, readers: [{name: r}]}`,
		`{network: {mode: Host}, receiver: {transport: OFI, ofiProvider: "verbs;ofi_rxm", port: 20515, metricsPort: 20100}, readers: [{name: r}]}`,
		`{receiver: {transport: OFI, ofiProvider: "verbs;ofi_rxm", mode: Send, memoryRegistration: PerBlock}, readers: [{name: r}]}`,
		`{receiver: {transport: OFI}, readers: [{name: r}]}`,
		`{receiver: {transport: Verbs, gidIndex: 1}, readers: [{name: r}]}`,
		// Reader slots left to readers on the node, outside the pod.
		`{ring: {hostIPC: true}}`,
		`{ring: {readers: 3, hostIPC: true}, readers: [{name: a}]}`,
		// Storage for readers: each allowed volume source, mounted by one or more readers.
		`{volumes: [{name: data, persistentVolumeClaim: {claimName: capture-data}}, {name: scratch, emptyDir: {sizeLimit: 1Gi}}, {name: host, hostPath: {path: /srv/dada, type: DirectoryOrCreate}}, {name: archive, nfs: {server: nfs.example.org, path: /export/dada}}],
		  ring: {readers: 2},
		  readers: [{name: dbdisk, args: [ring, read, --dada-dir, /data], volumeMounts: [{name: data, mountPath: /data}, {name: scratch, mountPath: /scratch}]},
		            {name: copy, volumeMounts: [{name: host, mountPath: /srv/dada, subPath: obs}, {name: archive, mountPath: /archive, readOnly: true}, {name: data, mountPath: /data}]}]}`,
		`{volumes: [{name: unused, emptyDir: {}}], readers: [{name: r}]}`,
		`{volumes: [{name: ringcapdata, emptyDir: {}}, {name: 0-a, hostPath: {path: /srv}}], readers: [{name: r}]}`,
		`{volumes: [{name: d, emptyDir: {}}], readers: [{name: r, volumeMounts: [{name: d, mountPath: /devices}, {name: d, mountPath: /etc/ringcap-data, subPath: x}]}]}`,
	} {
		obj := object(t, fmt.Sprintf("valid-%d", i), spec)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Errorf("valid spec %s rejected: %v", spec, err)
		}
	}
}

// The manifests in config/samples are valid.
// A volume source other than the four is not in the schema. kubectl (strict field
// validation, its default) is told it is an unknown field; a client that does not ask
// for strict validation has it pruned, with a warning: alone it leaves the volume
// without a source (TestInvalidRingCapturesRejected), beside an allowed one it is dropped.
func TestVolumeSourceOutsideSchema(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct{ spec, field string }{
		{`{volumes: [{name: c, configMap: {name: x}}], readers: [{name: r}]}`, "spec.volumes[0].configMap"},
		{`{volumes: [{name: v, emptyDir: {}, secret: {secretName: x}}], readers: [{name: r}]}`, "spec.volumes[0].secret"},
	} {
		obj := object(t, fmt.Sprintf("strict-%d", i), tc.spec)
		err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))
		if err == nil {
			_ = env.Client.Delete(ctx, obj)
			t.Errorf("spec %s was accepted with strict field validation", tc.spec)
		} else if want := fmt.Sprintf("unknown field %q", tc.field); !strings.Contains(err.Error(), want) {
			t.Errorf("spec %s: error does not say %s:\n%v", tc.spec, want, err)
		}
	}
	obj := object(t, "pruned-secret", `{volumes: [{name: v, emptyDir: {}, secret: {secretName: x}}], readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create without strict field validation: %v", err)
	}
	var rc ringcapv1.RingCapture
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	stored, err := json.Marshal(rc.Spec.Volumes)
	if err != nil {
		t.Fatal(err)
	}
	if string(stored) != `[{"name":"v","emptyDir":{}}]` {
		t.Errorf("stored volumes %s, want the emptyDir without the secret", stored)
	}
}

func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in config/samples: %v", err)
	}
	chart, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "charts", "ringcap", "examples", "*.yaml"))
	if err != nil || len(chart) == 0 {
		t.Fatalf("no examples in charts/ringcap/examples: %v", err)
	}
	files = append(files, chart...)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("sample-%d-%s", i, u.GetName()))
		if err := env.Client.Create(context.Background(), u); err != nil {
			t.Errorf("sample %s rejected: %v", f, err)
		}
	}
}

// Ring geometry and the transfer mode cannot change while the capture pod holds data
// (it received some, and the capture has not finished); other fields can, and
// everything can before the pod accepted data and once the capture finished.
func TestImmutableWhilePodRuns(t *testing.T) {
	ctx := context.Background()
	obj := object(t, "immutable", `{readers: [{name: a}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(obj)
	setPhaseBytes := func(phase ringcapv1.RingCapturePhase, bytes int64) {
		t.Helper()
		var rc ringcapv1.RingCapture
		if err := env.Client.Get(ctx, key, &rc); err != nil {
			t.Fatal(err)
		}
		rc.Status.Pod, rc.Status.Phase, rc.Status.BytesReceived = "immutable-capture", phase, bytes
		if err := env.Client.Status().Update(ctx, &rc); err != nil {
			t.Fatalf("status update to %s: %v", phase, err)
		}
	}
	update := func(mod func(rc *ringcapv1.RingCapture)) error {
		var rc ringcapv1.RingCapture
		if err := env.Client.Get(ctx, key, &rc); err != nil {
			t.Fatal(err)
		}
		mod(&rc)
		return env.Client.Update(ctx, &rc)
	}
	setPhase := func(phase ringcapv1.RingCapturePhase) { t.Helper(); setPhaseBytes(phase, 0) }
	// Before a pod exists: geometry may change.
	if err := update(func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Blocks = 6 }); err != nil {
		t.Fatalf("change geometry before the pod exists: %v", err)
	}
	// A pod that has accepted no data (unschedulable, starting, listening for its first
	// sender) is replaced at once by a change: geometry and mode may change.
	for _, phase := range []ringcapv1.RingCapturePhase{ringcapv1.PhasePending, ringcapv1.PhaseScheduled, ringcapv1.PhaseListening} {
		setPhase(phase)
		if err := update(func(rc *ringcapv1.RingCapture) {
			rc.Spec.Ring.Blocks++
			rc.Spec.Receiver.Mode = ringcapv1.TransferModeWrite
		}); err != nil {
			t.Errorf("change geometry and mode while %s without data: %v", phase, err)
		}
		if err := update(func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.Mode = ringcapv1.TransferModeSend }); err != nil {
			t.Errorf("change mode back while %s without data: %v", phase, err)
		}
	}
	// The error names the immutable field as its path (not <nil>): "spec.ring: Forbidden: ...".
	ringImmutable := "spec.ring: Forbidden: spec.ring is immutable while the capture pod holds data"
	modeImmutable := "spec.receiver.mode: Forbidden: spec.receiver.mode is immutable while the capture pod holds data"
	// Listening between observations: the pod holds data.
	setPhaseBytes(ringcapv1.PhaseListening, 1<<20)
	if err := update(func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Blocks = 8 }); err == nil || !strings.Contains(err.Error(), ringImmutable) {
		t.Errorf("changing geometry while Listening after 1 MiB: want %q, got %v", ringImmutable, err)
	}
	setPhase(ringcapv1.PhaseReceiving)
	for _, tc := range []struct {
		name string
		mod  func(rc *ringcapv1.RingCapture)
		want string
	}{
		{"blocks", func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Blocks = 8 }, ringImmutable},
		{"key", func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Key = "eada" }, ringImmutable},
		{"hugePages", func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.HugePages = true; rc.Spec.Ring.BlockBytes = 2 << 20 }, ringImmutable},
		{"hostIPC", func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.HostIPC = true }, ringImmutable},
		{"mode", func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.Mode = ringcapv1.TransferModeWrite }, modeImmutable},
	} {
		err := update(tc.mod)
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("changing %s while Receiving: want an Invalid error with %q, got %v", tc.name, tc.want, err)
		}
	}
	// Both at once: each field is named.
	err := update(func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring.Blocks = 8
		rc.Spec.Receiver.Mode = ringcapv1.TransferModeWrite
	})
	if err == nil || !strings.Contains(err.Error(), ringImmutable) || !strings.Contains(err.Error(), modeImmutable) {
		t.Errorf("changing ring and mode while Receiving: want both fields named, got %v", err)
	}
	// A status update alone is not refused by the rules on spec.
	setPhase(ringcapv1.PhaseScheduled)
	if err := update(func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.QueuePairs = 2 }); err != nil {
		t.Errorf("changing receiver.queuePairs while Receiving: %v", err)
	}
	setPhase(ringcapv1.PhaseSucceeded)
	if err := update(func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Blocks = 8 }); err != nil {
		t.Errorf("changing geometry after the capture finished: %v", err)
	}
}

// kubectl's printer columns are declared in the CRD.
func TestPrinterColumns(t *testing.T) {
	var crd unstructured.Unstructured
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "ringcaptures.ringcap.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
	var names []string
	for _, c := range cols {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if got, want := strings.Join(names, ","), "Phase,Node,MR mode,QPs,Received,Rate,Fill,Age,Address,Port,GID index,Blocks,Block bytes,Source,Transport,Held back (s),Loss"; got != want {
		t.Errorf("printer columns %s, want %s", got, want)
	}
	// The columns after Age are for `kubectl get -o wide` only (priority 1).
	for i, c := range cols {
		p, _, _ := unstructured.NestedInt64(c.(map[string]any), "priority")
		if want := int64(map[bool]int{true: 1}[i > 7]); p != want {
			t.Errorf("column %s has priority %d, want %d", names[i], p, want)
		}
	}
	short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	if len(short) != 1 || short[0] != "rcap" {
		t.Errorf("short names %v, want [rcap]", short)
	}
}

// `kubectl get rcap -o wide` shows the endpoint, the GID index, the running ring's geometry,
// the transport and the held-back time: the API server's table (what kubectl prints) has them.
func TestWideColumns(t *testing.T) {
	ctx := context.Background()
	obj := object(t, "wide", `{ring: {blocks: 8, blockBytes: 1048576}, readers: [{name: r}]}`)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	var rc ringcapv1.RingCapture
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	rc.Status.Endpoint = &ringcapv1.EndpointStatus{Address: "10.88.0.7", Port: 18515, GIDIndex: ptr(int32(3))}
	rc.Status.HeldBackSeconds = 42
	rc.Status.Running = &ringcapv1.RunningStatus{Blocks: 8, BlockBytes: 1048576, QueuePairs: 4, Transport: "OFI", OFIProvider: "efa"}
	rc.Status.Observation = &ringcapv1.ObservationHeaderStatus{Source: "J0437-4715"}
	if err := env.Client.Status().Update(ctx, &rc); err != nil {
		t.Fatal(err)
	}

	got := tableCells(ctx, t, "wide")
	for col, want := range map[string]string{
		"QPs": "4", "Address": "10.88.0.7", "Port": "18515", "GID index": "3", "Blocks": "8", "Block bytes": "1048576", "Source": "J0437-4715", "Transport": "OFI", "Held back (s)": "42",
	} {
		if got[col] != want {
			t.Errorf("column %q = %q, want %q (row %v)", col, got[col], want, got)
		}
	}
}

// tableCells reads a RingCapture as the API server's table (what kubectl prints) and
// returns its cells by column name.
func tableCells(ctx context.Context, t *testing.T, name string) map[string]string {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.APIPath, cfg.GroupVersion = "/apis", &ringcapv1.GroupVersion
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rest0, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rest0.Get().Namespace(ns).Resource("ringcaptures").Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get RingCapture %s as a table: %v", name, err)
	}
	var table metav1.Table
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("table of RingCapture %s: %d rows, %v\n%s", name, len(table.Rows), err, raw)
	}
	got := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		got[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return got
}

func ptr[T any](v T) *T { return &v }

// ring.header.values the receiver would refuse at start, or misuse, are refused at
// apply time with the reason; the CEL rules agree with the receiver's own
// (headerrules.CheckSetting) on every value, and a header too large for
// ring.headerBlockBytes is refused by the CEL estimate.
func TestHeaderValuesRules(t *testing.T) {
	long := strings.Repeat("x", 200)
	twenty := func() string {
		var kv []string
		for i := range 20 {
			kv = append(kv, fmt.Sprintf("KEY_%02d: %s", i, long))
		}
		return "{" + strings.Join(kv, ", ") + "}"
	}()
	tests := []struct {
		name, key, value string
		want             string // "" when admitted
	}{
		{"a word", "OBSERVER", "Jane_Doe", ""},
		{"a space", "OBSERVER", "Jane Doe", "one printable ASCII word"},
		{"empty", "OBSERVER", "", "one printable ASCII word"},
		{"non-ASCII", "OBSERVER", "Jürgen", "one printable ASCII word"},
		{"a tab", "OBSERVER", "a\tb", "one printable ASCII word"},
		{"HDR_SIZE", "HDR_SIZE", "8192", "must not set HDR_SIZE, OBS_OFFSET or RINGCAP_*"},
		{"OBS_OFFSET", "OBS_OFFSET", "0", "must not set HDR_SIZE, OBS_OFFSET or RINGCAP_*"},
		{"RINGCAP_OBSERVATION", "RINGCAP_OBSERVATION", "0", "must not set HDR_SIZE, OBS_OFFSET or RINGCAP_*"},
		{"RINGCAP_SEED", "RINGCAP_SEED", "7", "must not set HDR_SIZE, OBS_OFFSET or RINGCAP_*"},
		{"TRANSFER_SIZE", "TRANSFER_SIZE", "1048576", "must not set TRANSFER_SIZE"},
		{"UTC_START", "UTC_START", "2026-11-28-13:45:00", ""},
		{"UTC_START yesterday", "UTC_START", "yesterday", "UTC_START must be YYYY-MM-DD-hh:mm:ss"},
		{"UTC_START ISO", "UTC_START", "2026-11-28T13:45:00", "UTC_START must be YYYY-MM-DD-hh:mm:ss"},
		{"UTC_START month 13", "UTC_START", "2026-13-28-13:45:00", "UTC_START must be YYYY-MM-DD-hh:mm:ss"},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			goErr := headerrules.CheckSetting(tc.key, tc.value)
			if (goErr == nil) != (tc.want == "") {
				t.Errorf("headerrules.CheckSetting(%s, %q) = %v: the receiver and the API disagree", tc.key, tc.value, goErr)
			}
			spec := fmt.Sprintf(`{ring: {header: {values: {%s: "%s"}}}, readers: [{name: r}]}`, tc.key, tc.value)
			expectAdmission(ctx, t, fmt.Sprintf("header-value-%d", i), spec, tc.want)
		})
	}
	t.Run("twenty values of 200 characters", func(t *testing.T) {
		expectAdmission(ctx, t, "header-too-large", `{ring: {header: {values: `+twenty+`}}, readers: [{name: r}]}`,
			"ring.header.values do not fit ring.headerBlockBytes")
		expectAdmission(ctx, t, "header-fits", `{ring: {headerBlockBytes: 8192, header: {values: `+twenty+`}}, readers: [{name: r}]}`, "")
	})
	t.Run("template", func(t *testing.T) {
		expectAdmission(ctx, t, "template-transfer-size", `{ring: {header: {template: "HDR_VERSION 1.0\nTRANSFER_SIZE 1048576\n"}}, readers: [{name: r}]}`,
			"ring.header.template must not set TRANSFER_SIZE")
		expectAdmission(ctx, t, "template-non-ascii", `{ring: {header: {template: "OBSERVER Jürgen\n"}}, readers: [{name: r}]}`,
			"ring.header.template must be ASCII text")
		expectAdmission(ctx, t, "template-psrdada", `{ring: {header: {template: "HDR_VERSION 1.0\nHDR_SIZE 4096\nOBS_OFFSET 0\n# TRANSFER_SIZE 1\nSOURCE J0437-4715\n"}}, readers: [{name: r}]}`, "")
	})
}

// expectAdmission creates a RingCapture from specYAML and checks that the API
// server refuses it with a message holding want, or admits it (want "").
func expectAdmission(ctx context.Context, t *testing.T, name, specYAML, want string) {
	t.Helper()
	obj := object(t, name, specYAML)
	err := env.Client.Create(ctx, obj)
	if err == nil {
		_ = env.Client.Delete(ctx, obj)
	}
	switch {
	case want == "" && err != nil:
		t.Errorf("spec %.200s rejected: %v", specYAML, err)
	case want != "" && err == nil:
		t.Errorf("spec %.200s admitted, want a refusal saying %q", specYAML, want)
	case want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want)):
		t.Errorf("spec %.200s: %v, want an Invalid error saying %q", specYAML, err, want)
	}
}
