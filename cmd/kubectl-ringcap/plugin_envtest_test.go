//go:build envtest

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/testenv"
)

// The plugin against a real kube-apiserver: two captures in two namespaces, their status
// written through the status subresource as the operator writes it, then `top --once`,
// `top --once -A` and `describe NAME` through the cobra command and a kubeconfig file.
func TestPluginOnAPIServer(t *testing.T) {
	env := testenv.StartT(t)
	kubeconfig := writeKubeconfig(t, env.Config, "radio")
	ctx := context.Background()
	st := receivingStatus()
	st.Conditions[0].LastTransitionTime = metav1.Now()
	st.Conditions[1].LastTransitionTime = metav1.Now()
	createWithStatus(ctx, t, env, "radio", "pulsar", st)
	createWithStatus(ctx, t, env, "optical", "flash", ringcapv1.RingCaptureStatus{Phase: "Listening",
		Ring:    &ringcapv1.RingFillStatus{Blocks: 4, Fill: "0/4", Readers: []ringcapv1.ReaderSlotStatus{{Slot: 0}}},
		Packets: &ringcapv1.PacketStatus{Protocol: "vdif", Packets: 4000, ReceivedPackets: 3999, Late: 1, Loss: "0.03%"}})

	rows := table(t, run(t, "--kubeconfig", kubeconfig, "top", "--once"))
	wantRows(t, "top --once", rows, [][]string{
		{"NAME", "PHASE", "RATE", "RECEIVED", "FILL", "SLOWEST READER", "HELD BACK", "LOSS", "OBS", "AGE"},
		{"pulsar", "Receiving", "9.6 Gbit/s", "1.5 GiB", "6/8", "slot 1: 6 blocks (6.0 MiB)", "3s", "-", "2"},
	})
	rows = table(t, run(t, "--kubeconfig", kubeconfig, "top", "--once", "-A"))
	wantRows(t, "top --once -A", rows, [][]string{
		{"NAMESPACE", "NAME", "PHASE", "RATE", "RECEIVED", "FILL", "SLOWEST READER", "HELD BACK", "LOSS", "OBS", "AGE"},
		{"optical", "flash", "Listening", "-", "-", "0/4", "slot 0: empty", "0s", "0.03%", "0"},
		{"radio", "pulsar", "Receiving", "9.6 Gbit/s", "1.5 GiB", "6/8", "slot 1: 6 blocks (6.0 MiB)", "3s", "-", "2"},
	})
	rows = table(t, run(t, "--kubeconfig", kubeconfig, "top", "--once", "-n", "empty"))
	wantRows(t, "top --once -n empty", rows, [][]string{{"No RingCaptures found in namespace empty."}})

	out := run(t, "--kubeconfig", kubeconfig, "describe", "pulsar")
	for _, want := range []string{"Name:       pulsar\n", "Namespace:  radio\n", "Phase:      Receiving\n",
		"  Address:    10.0.0.1\n", "  Port:       18515\n", "  Device:     rxe0 port 1\n", "  GID index:  1\n",
		"  GID:        fe80::5054:ff:fe12:3456\n", "  Fill:            6/8\n",
		"  Ready           True     Receiving       ", "  dbdisk   137 ", "  Source:     J0437-4715\n",
		"  Reason:        RunInterrupted\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pulsar lacks %q:\n%s", want, out)
		}
	}
	slots := regexp.MustCompile(`(?m)^  1 +true +READING +6 +6\.0 MiB +\d+[smhd]\S* ago$`)
	if !slots.MatchString(out) {
		t.Errorf("describe pulsar has no line for reader slot 1 six blocks behind:\n%s", out)
	}
	out = run(t, "--kubeconfig", kubeconfig, "describe", "flash", "-A")
	for _, want := range []string{"Namespace:  optical\n", "  Protocol:       vdif\n", "  Loss:           0.03%\n", "  Late:           1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe flash -A lacks %q:\n%s", want, out)
		}
	}
	if _, err := execute("--kubeconfig", kubeconfig, "describe", "flash"); err == nil || !strings.Contains(err.Error(), "radio/flash") {
		t.Errorf("describe flash in namespace radio: error %v, want one naming radio/flash", err)
	}
}

func createWithStatus(ctx context.Context, t *testing.T, env *testenv.Env, ns, name string, st ringcapv1.RingCaptureStatus) {
	t.Helper()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	rc.Spec.Ring.HostIPC = true // no reader containers: the free slots are left to readers on the node
	if err := env.Client.Create(ctx, rc); err != nil {
		t.Fatalf("create RingCapture %s/%s: %v", ns, name, err)
	}
	rc.Status = st
	if err := env.Client.Status().Update(ctx, rc); err != nil {
		t.Fatalf("write the status of RingCapture %s/%s: %v", ns, name, err)
	}
}

// writeKubeconfig writes cfg as a kubeconfig file whose context has namespace ns.
func writeKubeconfig(t *testing.T, cfg *rest.Config, ns string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: ns}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func execute(args ...string) (string, error) {
	var out bytes.Buffer
	root := newRootCmd(&out, time.Now)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := execute(args...)
	if err != nil {
		t.Fatalf("kubectl ringcap %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// table parses the plugin's table: columns are separated by at least two spaces.
func table(t *testing.T, out string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, regexp.MustCompile(` {2,}`).Split(strings.TrimSpace(line), -1))
	}
	return rows
}

// wantRows checks rows against want; a want row may leave out trailing cells (the AGE).
func wantRows(t *testing.T, what string, rows, want [][]string) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows %q, want %d", what, len(rows), rows, len(want))
	}
	for i := range want {
		if len(rows[i]) < len(want[i]) || !slices.Equal(rows[i][:len(want[i])], want[i]) {
			t.Errorf("%s: row %d is %q, want %q", what, i, rows[i], want[i])
		}
	}
}
