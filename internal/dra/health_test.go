package dra

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drahealth "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func TestDeviceHealth(t *testing.T) {
	up := func(dev string, port int) PortDevice {
		return PortDevice{Name: dev + "-p" + string(rune('0'+port)), Dev: rdma.Device{Name: dev}, PortChoice: PortChoice{Port: rdma.Port{Num: port, State: "ACTIVE"}}}
	}
	a, b := up("a", 1), up("b", 1)
	pub := func(ps ...PortDevice) map[string]PortDevice {
		m := map[string]PortDevice{}
		for _, p := range ps {
			m[p.Name] = p
		}
		return m
	}
	const (
		ok  = kubeletplugin.HealthStatusHealthy
		bad = kubeletplugin.HealthStatusUnhealthy
	)
	for _, tc := range []struct {
		name       string
		published  map[string]PortDevice
		known      map[string]PortDevice
		held       []string
		left       []LeftOut
		want       []kubeletplugin.HealthStatus
		wantNames  []string
		wantReason map[string]string
	}{
		{name: "all up", published: pub(a, b), known: pub(a, b), want: []kubeletplugin.HealthStatus{ok, ok}, wantNames: []string{"a-p1", "b-p1"}},
		{name: "port down", published: pub(a), known: pub(a, b), left: []LeftOut{{Device: "b", Port: 1, Reason: "port is DOWN (Disabled)"}},
			want: []kubeletplugin.HealthStatus{ok, bad}, wantNames: []string{"a-p1", "b-p1"}, wantReason: map[string]string{"b-p1": "port is DOWN"}},
		{name: "device gone", published: pub(a), known: pub(a, b),
			want: []kubeletplugin.HealthStatus{ok, bad}, wantNames: []string{"a-p1", "b-p1"}, wantReason: map[string]string{"b-p1": "gone"}},
		{name: "held, down since before start", published: pub(a), known: pub(a), held: []string{"b-p1", "a-p1"},
			want: []kubeletplugin.HealthStatus{ok, bad}, wantNames: []string{"a-p1", "b-p1"}, wantReason: map[string]string{"b-p1": "since the driver started"}},
		{name: "nothing", want: []kubeletplugin.HealthStatus{}, wantNames: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deviceHealth(tc.published, tc.known, tc.held, tc.left)
			names, health := []string{}, []kubeletplugin.HealthStatus{}
			for _, h := range got {
				names, health = append(names, h.Name), append(health, h.Health)
				if want, ok := tc.wantReason[h.Name]; ok && !strings.Contains(h.Message, want) {
					t.Errorf("%s: message %q, want it to say %q", h.Name, h.Message, want)
				}
			}
			if !reflect.DeepEqual(names, tc.wantNames) || !reflect.DeepEqual(health, tc.want) {
				t.Errorf("health %v %v, want %v %v", names, health, tc.wantNames, tc.want)
			}
		})
	}
}

// TestHealthOverGRPC watches the driver's health as a 1.34 kubelet does (the v1alpha1
// DRAResourceHealth service on the helper's DRA socket): every device Healthy at
// first; the port of a prepared claim goes down and leaves the slice, and the report
// says Unhealthy; a restarted driver still reports it Unhealthy; back up, Healthy.
func TestHealthOverGRPC(t *testing.T) {
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, rxeTree+"/sys"), Dev: rdmatest.CopyDir(t, rxeTree+"/dev")}
	cdi := t.TempDir()
	d := newDriver(t, roots, cdi)
	if r := prepare(t, d, claim("u1", "c1", "r:rxe1-p1"))["u1"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	stream := watchHealth(t, d)
	want := map[string]drahealth.HealthStatus{"rxe0-p1": drahealth.HealthStatus_HEALTHY, "rxe1-p1": drahealth.HealthStatus_HEALTHY}
	recvUntil(t, stream, want)

	rdmatest.SetPortState(t, roots.Sys, "rxe1", 1, "DOWN")
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	if names := names(d.Resources()); !reflect.DeepEqual(names, []string{"rxe0-p1"}) {
		t.Errorf("published %v with rxe1 down", names)
	}
	want["rxe1-p1"] = drahealth.HealthStatus_UNHEALTHY
	msg := recvUntil(t, stream, want)["rxe1-p1"]
	if !strings.Contains(msg, "rxe1 port 1") || !strings.Contains(msg, "DOWN") {
		t.Errorf("rxe1-p1's message %q does not say its port is down", msg)
	}

	restarted := newDriver(t, roots, cdi)
	report, _ := restarted.HealthReport()
	if len(report.Devices) != 2 || report.Devices[1].DeviceName != "rxe1-p1" || report.Devices[1].Health != kubeletplugin.HealthStatusUnhealthy ||
		report.Devices[1].PoolName != node {
		t.Errorf("restarted driver's report %+v, want rxe1-p1 (held by u1) Unhealthy", report.Devices)
	}

	rdmatest.SetPortState(t, roots.Sys, "rxe1", 1, "ACTIVE")
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	want["rxe1-p1"] = drahealth.HealthStatus_HEALTHY
	recvUntil(t, stream, want)
}

// watchHealth serves d's DRA gRPC services through the kubeletplugin helper and opens
// the health stream on its socket.
func watchHealth(t *testing.T, d *Driver) drahealth.DRAResourceHealth_NodeWatchResourcesClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "rdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net: each Recv below waits for a report
	t.Cleanup(cancel)
	h, err := kubeletplugin.Start(ctx, d, kubeletplugin.DriverName(DriverName), kubeletplugin.KubeClient(fake.NewClientset()),
		kubeletplugin.NodeName(node), kubeletplugin.PluginDataDirectoryPath(dir), kubeletplugin.RegistrationService(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	stream, err := drahealth.NewDRAResourceHealthClient(conn).NodeWatchResources(ctx, &drahealth.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// recvUntil reads reports until one gives exactly want (by device name) with pool
// node; it returns that report's messages.
func recvUntil(t *testing.T, stream drahealth.DRAResourceHealth_NodeWatchResourcesClient, want map[string]drahealth.HealthStatus) map[string]string {
	t.Helper()
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("health stream: %v (waiting for %v)", err, want)
		}
		got, msgs := map[string]drahealth.HealthStatus{}, map[string]string{}
		for _, dh := range resp.GetDevices() {
			if dh.GetDevice().GetPoolName() != node || dh.GetLastUpdatedTime() == 0 {
				t.Errorf("report entry %v: want pool %s and a time", dh, node)
			}
			got[dh.GetDevice().GetDeviceName()] = dh.GetHealth()
			msgs[dh.GetDevice().GetDeviceName()] = dh.GetMessage()
		}
		t.Logf("report %v %v", got, msgs)
		if reflect.DeepEqual(got, want) {
			return msgs
		}
	}
}
