package dra

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// Device health for the kubelet (KEP-4680, the DRAResourceHealth gRPC service the
// kubeletplugin helper serves): a published device is Healthy; a device that was
// published since the driver started, or is held by a prepared claim, but is not
// published now (its port went down, or it is gone) is Unhealthy, with the reason. A
// DOWN port leaves the ResourceSlice even when a claim holds it: the claim keeps its
// allocation, and the port must not be handed to a new claim while it is down.

// healthResend is how often the report is sent again without a change; the kubelet
// treats a device as Unknown when its report is older than healthTimeout.
const (
	healthResend  = 10 * time.Second
	healthTimeout = 30 * time.Second
)

// devHealth is one device's health as the driver judges it.
type devHealth struct {
	Name    string
	Health  kubeletplugin.HealthStatus
	Message string
}

// healthState is what the health report is made of, kept under Driver.mu.
type healthState struct {
	known   map[string]PortDevice // every device published since start, by name
	left    []LeftOut             // ports left out at the last scan
	at      time.Time             // when the last scan succeeded
	last    []devHealth           // the last computed health
	changed chan struct{}         // closed (and replaced) when last changes
}

func newHealthState() healthState {
	return healthState{known: map[string]PortDevice{}, changed: make(chan struct{})}
}

// scanned records a successful scan.
func (h *healthState) scanned(pds []PortDevice, left []LeftOut, at time.Time) {
	for _, p := range pds {
		h.known[p.Name] = p
	}
	h.left = left
	h.at = at
}

// updateHealthLocked recomputes the devices' health and wakes the watchers when it
// changed.
func (d *Driver) updateHealthLocked() {
	var held []string
	for _, pc := range d.prepared {
		for _, a := range pc.Devices {
			held = append(held, a.Device)
		}
	}
	now := deviceHealth(d.devices, d.health.known, held, d.health.left)
	if reflect.DeepEqual(now, d.health.last) {
		return
	}
	d.health.last = now
	close(d.health.changed)
	d.health.changed = make(chan struct{})
}

// deviceHealth is the health of each device the kubelet may ask about, sorted by
// name: published ones are Healthy; known (published earlier) or held (by a prepared
// claim) ones that are not published now are Unhealthy, saying why.
func deviceHealth(published, known map[string]PortDevice, held []string, left []LeftOut) []devHealth {
	names := map[string]bool{}
	for n := range published {
		names[n] = true
	}
	for n := range known {
		names[n] = true
	}
	for _, n := range held {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sortStrings(sorted)
	out := make([]devHealth, 0, len(sorted))
	for _, n := range sorted {
		if p, ok := published[n]; ok {
			out = append(out, devHealth{Name: n, Health: kubeletplugin.HealthStatusHealthy,
				Message: fmt.Sprintf("%s port %d is %s", p.Dev.Name, p.Port.Num, p.Port.State)})
			continue
		}
		out = append(out, devHealth{Name: n, Health: kubeletplugin.HealthStatusUnhealthy, Message: unhealthyReason(known, left, n)})
	}
	return out
}

// unhealthyReason says why a device is not published now.
func unhealthyReason(known map[string]PortDevice, left []LeftOut, name string) string {
	p, ok := known[name]
	if !ok {
		return "not published on this node since the driver started (port down or device gone)"
	}
	for _, l := range left {
		if l.Device == p.Dev.Name && l.Port == p.Port.Num {
			return "not allocatable: " + l.String()
		}
	}
	return fmt.Sprintf("device %s port %d is gone from this node", p.Dev.Name, p.Port.Num)
}

// HealthReport is the current health of the driver's devices, and a channel closed
// when it changes.
func (d *Driver) HealthReport() (kubeletplugin.DeviceHealthReport, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	report := kubeletplugin.DeviceHealthReport{Devices: make([]kubeletplugin.DeviceHealth, 0, len(d.health.last))}
	for _, h := range d.health.last {
		report.Devices = append(report.Devices, kubeletplugin.DeviceHealth{PoolName: d.opts.NodeName, DeviceName: h.Name,
			Health: h.Health, Message: h.Message, LastUpdated: d.health.at, HealthCheckTimeout: healthTimeout})
	}
	return report, d.health.changed
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: a report of every device at
// once, then one whenever a rescan or a (un)prepare changes a device's health, and
// the same again every healthResend so the kubelet does not age it to Unknown. A
// report's time is the last successful scan's: when scans fail, the kubelet ages the
// devices to Unknown.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	resend := time.NewTicker(healthResend)
	defer resend.Stop()
	for {
		report, changed := d.HealthReport()
		select {
		case <-ctx.Done():
			return nil
		case reports <- report:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-resend.C:
		}
	}
}
