package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Options configure a Driver.
type Options struct {
	Config   *plugin.Config // nil: plugin.DefaultConfig()
	Roots    rdma.Roots
	NodeName string // the node's name: the ResourceSlice pool and owner
	CDIDir   string // claim CDI specs go here ("/var/run/cdi")
	// Client publishes ResourceSlices and writes claim status; nil: Prepare does not
	// write claim status (tests without an API server).
	Client kubernetes.Interface
	Log    logr.Logger
	// PluginDir and RegistryDir are the kubelet's plugin directory for this driver
	// and its plugins_registry; empty: the kubelet's defaults.
	PluginDir, RegistryDir string
	// OtherConfig is the device plugin's config when both run on the node (plugin.mode
	// both): a device both configs select refuses Run, or is left out when it appears later.
	// Set, the driver leaves the node's link counters to the device plugin, which exports
	// every port once; nil, the driver exports them.
	OtherConfig *plugin.Config
	// PodUID is the driver pod's UID: set, two instances may run at once during a
	// rolling update (the kubeletplugin helper's RollingUpdate, calls serialised by a
	// lock file in PluginDir); empty: one instance at a time.
	PodUID types.UID
	// Registry takes the driver's metrics; nil: a registry of its own (not served).
	Registry prometheus.Registerer
	// RegistrationTimeout: Run ends with ErrNotRegistered when the kubelet has not
	// registered the driver this long after it started; 0: Run does not wait.
	RegistrationTimeout time.Duration
}

// Publisher takes the node's ResourceSlices (kubeletplugin.Helper in production).
type Publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

// allocated is one device of a claim this driver prepared, with the RDMA device and
// uverbs device it gave (empty when a spec from an earlier version does not say).
type allocated struct {
	Request string
	Device  string
	IBDev   string
	UVerbs  string
	Admin   bool // allocated with adminAccess: beside other claims, not holding the device
}

// preparedClaim is what Unprepare and a restarted driver need to know of a claim.
type preparedClaim struct {
	UID             types.UID
	Namespace, Name string
	Devices         []allocated
}

func (c preparedClaim) annotation() string {
	parts := make([]string, len(c.Devices))
	for i, a := range c.Devices {
		parts[i] = a.Request + ":" + a.Device
	}
	return strings.Join(parts, ",")
}

// ibdevs is the claim's RDMA devices in device order, for the spec's annotation.
func (c preparedClaim) ibdevs() string {
	parts := make([]string, len(c.Devices))
	for i, a := range c.Devices {
		parts[i] = a.IBDev
	}
	return strings.Join(parts, ",")
}

// adminAnnotation is "<request>:<device>,..." of the devices allocated with admin access.
func (c preparedClaim) adminAnnotation() string {
	var parts []string
	for _, a := range c.Devices {
		if a.Admin {
			parts = append(parts, a.Request+":"+a.Device)
		}
	}
	return strings.Join(parts, ",")
}

// Driver is ringcap's DRA driver: it implements kubeletplugin.DRAPlugin.
type Driver struct {
	opts Options
	log  logr.Logger

	metrics *metrics

	mu        sync.Mutex
	regSock   string                        // the registration socket while Run runs, for Healthy
	fatal     context.CancelCauseFunc       // ends Run with its cause (HandleError)
	devices   map[string]PortDevice         // by device name, from the last scan
	left      map[string]bool               // ports left out and entries skipped at the last scan (each logged once)
	published map[string]resourceapi.Device // by name; nil until the first Publish
	prepared  map[types.UID]preparedClaim   // as on disk at the last load (each call loads it)
	badSpecs  map[string]bool               // spec files found unreadable at the last check (each reported once)
	health    healthState

	links       *linkmetrics.CaptureCollector // prepared claims' ports, by claim UID
	linksMu     sync.Mutex
	podCaptures map[types.UID]string      // capture label by pod UID
	claimPods   map[types.UID][]types.UID // pods each tracked claim is reserved for
}

// New checks the options, and loads the claims prepared by an earlier run from the
// CDI directory.
func New(opts Options) (*Driver, error) {
	if opts.Config == nil {
		opts.Config = plugin.DefaultConfig()
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := checkPools(opts.Config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if opts.OtherConfig != nil {
		if err := opts.OtherConfig.Validate(); err != nil {
			return nil, fmt.Errorf("other config (the device plugin's): %w", err)
		}
	}
	if opts.Roots.Sys == "" || opts.Roots.Dev == "" {
		return nil, errors.New("sysfs and /dev roots must be set")
	}
	if opts.CDIDir == "" {
		return nil, errors.New("no CDI directory")
	}
	if opts.NodeName == "" {
		return nil, errors.New("no node name")
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	if err := registerLinkCounters(opts); err != nil {
		return nil, err
	}
	d := &Driver{opts: opts, log: opts.Log, metrics: m, devices: map[string]PortDevice{}, left: map[string]bool{}, badSpecs: map[string]bool{},
		health: newHealthState(), links: linkmetrics.NewCaptureCollector(opts.Roots), podCaptures: map[types.UID]string{}, claimPods: map[types.UID][]types.UID{}}
	if err := d.registerCaptureLinks(); err != nil {
		return nil, err
	}
	if _, err := d.loadPreparedLocked(); err != nil {
		return nil, err
	}
	return d, nil
}

// loadPreparedLocked reads the prepared claims from the CDI directory, the state
// shared with an earlier run and with the other instance of a rolling update; it
// returns the files that could not be read (CheckState reports them).
func (d *Driver) loadPreparedLocked() ([]badSpec, error) {
	prepared, bad, err := loadSpecs(d.opts.CDIDir)
	if err != nil {
		return nil, fmt.Errorf("load prepared claims: %w", err)
	}
	d.prepared = prepared
	d.updateHealthLocked()
	return bad, nil
}

// Prepared returns the UIDs of the claims currently prepared, sorted.
func (d *Driver) Prepared() []types.UID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]types.UID, 0, len(d.prepared))
	for uid := range d.prepared {
		out = append(out, uid)
	}
	sortUIDs(out)
	return out
}

// Rescan reads sysfs and replaces the device set; it reports whether the published
// slices would change.
func (d *Driver) Rescan() (bool, error) {
	pds, left, skipped, err := scan(d.opts.Config, d.opts.OtherConfig, d.opts.Roots)
	if err != nil {
		return false, fmt.Errorf("scan RDMA devices: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := map[string]bool{}
	for _, l := range left {
		now[l.String()] = true
		if !d.left[l.String()] {
			d.log.Info("Port not published", "device", l.Device, "port", l.Port, "reason", l.Reason)
		}
	}
	for _, s := range skipped {
		now[s.String()] = true
		if !d.left[s.String()] {
			d.log.Info("Skipped by discovery", "what", s.String())
		}
	}
	d.left = now
	d.devices = map[string]PortDevice{}
	api := make([]resourceapi.Device, 0, len(pds))
	for _, p := range pds {
		d.devices[p.Name] = p
		api = append(api, p.APIDevice())
	}
	d.health.scanned(pds, left, time.Now())
	d.updateHealthLocked()
	return !reflect.DeepEqual(deviceSet(api), d.published), nil
}

// deviceSet is devices by name: published devices compare as a set, in no order.
func deviceSet(devs []resourceapi.Device) map[string]resourceapi.Device {
	out := make(map[string]resourceapi.Device, len(devs))
	for _, dev := range devs {
		out[dev.Name] = dev
	}
	return out
}

// Resources is the node's pool as the slices to publish.
func (d *Driver) Resources() resourceslice.DriverResources {
	d.mu.Lock()
	defer d.mu.Unlock()
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{d.opts.NodeName: d.poolLocked()}}
}

func (d *Driver) poolLocked() resourceslice.Pool {
	pds := make([]PortDevice, 0, len(d.devices))
	for _, p := range d.devices {
		pds = append(pds, p)
	}
	sortDevices(pds)
	var pool resourceslice.Pool
	for _, s := range Slices(pds) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: s})
	}
	return pool
}

// Publish hands the current slices to pub and remembers them as published.
func (d *Driver) Publish(ctx context.Context, pub Publisher) error {
	res := d.Resources()
	if err := pub.PublishResources(ctx, res); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var devs []resourceapi.Device
	for _, s := range res.Pools[d.opts.NodeName].Slices {
		devs = append(devs, s.Devices...)
	}
	d.published = deviceSet(devs)
	d.metrics.published(len(devs), time.Now())
	return nil
}

// Loop rescans every interval and republishes when the slices change, until ctx is
// done. Scan errors are logged and retried at the next interval.
func (d *Driver) Loop(ctx context.Context, pub Publisher, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := d.Rescan()
		if err != nil {
			d.log.Error(err, "Rescan")
			continue
		}
		if changed {
			if err := d.Publish(ctx, pub); err != nil {
				d.log.Error(err, "Republish")
			} else {
				d.log.Info("Republished ResourceSlices", "devices", d.deviceNames())
			}
		}
	}
}

func (d *Driver) deviceNames() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.devices))
	for n := range d.devices {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}

// Run scans, starts the kubelet plugin (registration and DRA gRPC services),
// publishes the node's ResourceSlices and keeps them current until ctx is done (then
// it returns nil). It ends early with an error when the kubelet does not register the
// driver within Options.RegistrationTimeout, or when the helper reports a fatal error
// (HandleError).
func (d *Driver) Run(ctx context.Context) error {
	if d.opts.Client == nil {
		return errors.New("no API client")
	}
	if err := d.refuseOverlaps(); err != nil {
		return err
	}
	if _, err := d.Rescan(); err != nil {
		return err
	}
	parent := ctx
	ctx, fatal := context.WithCancelCause(klog.NewContext(ctx, d.log))
	defer fatal(nil)
	reg := newRegistrationWatch(func(ok bool) { d.metrics.registered.Set(boolGauge(ok)) })
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(d.opts.Client),
		kubeletplugin.NodeName(d.opts.NodeName),
		kubeletplugin.GRPCInterceptor(reg.intercept),
	}
	pluginDir, registryDir := d.pluginDir(), d.opts.RegistryDir
	if registryDir == "" {
		registryDir = kubeletplugin.KubeletRegistryDir
	}
	for _, dir := range []string{pluginDir, registryDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create kubelet plugin directory: %w", err)
		}
	}
	opts = append(opts, kubeletplugin.PluginDataDirectoryPath(pluginDir), kubeletplugin.RegistrarDirectoryPath(registryDir))
	opts = append(opts, d.stateOptions()...)
	stop := d.startStateChecks(ctx)
	defer stop()
	h, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer h.Stop()
	defer d.watchRun(ctx, fatal, reg, registrarSocket(registryDir, d.opts.PodUID))()
	if err := d.Publish(ctx, h); err != nil {
		return err
	}
	d.log.Info("Published ResourceSlices", "node", d.opts.NodeName, "devices", d.deviceNames(), "prepared", len(d.Prepared()))
	d.Loop(ctx, h, d.opts.Config.RescanInterval.Duration)
	if parent.Err() != nil {
		return nil // stopped by the caller
	}
	return context.Cause(ctx) // ended by fatal
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// watchRun makes the running driver reachable for Healthy (its registration socket
// regSock) and HandleError (fatal ends Run), and waits for the kubelet's registration
// (reg) in the background when Options.RegistrationTimeout is set. The returned func
// undoes both; Run calls it before it returns.
func (d *Driver) watchRun(ctx context.Context, fatal context.CancelCauseFunc, reg *registrationWatch, regSock string) (stop func()) {
	d.setRunning(regSock, fatal)
	var wg sync.WaitGroup
	if d.opts.RegistrationTimeout > 0 {
		wg.Go(func() { d.awaitRegistration(ctx, reg, fatal) })
	}
	return func() {
		fatal(nil)
		wg.Wait()
		d.setRunning("", nil)
	}
}

func (d *Driver) setRunning(regSock string, fatal context.CancelCauseFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.regSock, d.fatal = regSock, fatal
}

// awaitRegistration ends Run (through fatal) when the kubelet does not register the
// driver in time.
func (d *Driver) awaitRegistration(ctx context.Context, reg *registrationWatch, fatal context.CancelCauseFunc) {
	err := reg.wait(ctx, d.opts.RegistrationTimeout)
	switch {
	case err == nil:
		d.log.Info("Registered with the kubelet")
	case ctx.Err() == nil:
		fatal(err)
	}
}

// Healthy calls the driver's registration socket and its DRA socket as the kubelet
// would; an error says which did not answer. Before Run has started the kubelet
// plugin, and after it stopped, the driver is not healthy.
func (d *Driver) Healthy(ctx context.Context) error {
	d.mu.Lock()
	regSock := d.regSock
	d.mu.Unlock()
	if regSock == "" {
		return errors.New("the kubelet plugin is not running")
	}
	return probeSockets(ctx, regSock)
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin: for each claim, a CDI spec
// with its devices, and their CDI device IDs. A claim already prepared gets the same
// answer (the kubelet may ask again); a device that is not published now (port down
// since allocation) or already prepared for another claim fails that claim. The
// prepared claims are read from the CDI directory first: the other instance of a
// rolling update may have changed them.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	if len(claims) > 0 { // not the health probe's empty call
		defer d.metrics.since(opPrepare, time.Now())
	}
	out := map[types.UID]kubeletplugin.PrepareResult{}
	done, err := d.prepareAll(claims, out)
	if err != nil {
		return nil, err
	}
	byUID := make(map[types.UID]*resourceapi.ResourceClaim, len(claims))
	for _, c := range claims {
		byUID[c.UID] = c
	}
	for _, pc := range done {
		d.trackLinks(ctx, byUID[pc.UID], pc)
	}
	if d.opts.Client == nil {
		return out, nil
	}
	for _, pc := range done {
		if err := d.writeStatus(ctx, pc); err != nil {
			d.statusNotWritten(ctx, pc, err)
		}
	}
	return out, nil
}

// prepareAll prepares each claim into out under the lock, with the state loaded from
// disk; it returns the claims prepared.
func (d *Driver) prepareAll(claims []*resourceapi.ResourceClaim, out map[types.UID]kubeletplugin.PrepareResult) ([]preparedClaim, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.loadPreparedLocked(); err != nil {
		return nil, err
	}
	defer d.updateHealthLocked()
	var done []preparedClaim
	for _, c := range claims {
		res, pc, err := d.prepare(c)
		d.metrics.claim(opPrepare, err)
		if err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare claim %s/%s: %w", c.Namespace, c.Name, err)}
			continue
		}
		out[c.UID] = res
		done = append(done, pc)
	}
	return done, nil
}

// prepare prepares one claim; d.mu is held.
func (d *Driver) prepare(c *resourceapi.ResourceClaim) (kubeletplugin.PrepareResult, preparedClaim, error) {
	if c.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{}, preparedClaim{}, errors.New("not allocated")
	}
	if pc, ok := d.prepared[c.UID]; ok {
		return prepareResult(pc, d.opts.NodeName), pc, nil
	}
	pc := preparedClaim{UID: c.UID, Namespace: c.Namespace, Name: c.Name}
	if err := refuseOpaqueConfig(c.Status.Allocation.Devices); err != nil {
		return kubeletplugin.PrepareResult{}, pc, err
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != d.opts.NodeName {
			return kubeletplugin.PrepareResult{}, pc, fmt.Errorf("device %s is in pool %q, this node's pool is %q", r.Device, r.Pool, d.opts.NodeName)
		}
		pd, ok := d.devices[r.Device]
		if !ok {
			return kubeletplugin.PrepareResult{}, pc, fmt.Errorf("device %s is not allocatable on this node now (port down or gone since allocation)", r.Device)
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		if other, ok := d.holderLocked(pd); ok && !admin {
			return kubeletplugin.PrepareResult{}, pc, fmt.Errorf("device %s (%s) is already prepared for claim %s/%s", r.Device, pd.Dev.Name, other.Namespace, other.Name)
		}
		pc.Devices = append(pc.Devices, allocated{Request: r.Request, Device: r.Device, IBDev: pd.Dev.Name, UVerbs: pd.Dev.UVerbs, Admin: admin})
	}
	if len(pc.Devices) == 0 {
		return kubeletplugin.PrepareResult{}, pc, fmt.Errorf("no device of driver %s allocated", DriverName)
	}
	spec := claimSpec(pc, d.devices)
	addUMad(&spec, pc, d.devices, d.opts.Config)
	if err := writeSpec(d.opts.CDIDir, c.UID, spec); err != nil {
		return kubeletplugin.PrepareResult{}, pc, err
	}
	d.prepared[c.UID] = pc
	return prepareResult(pc, d.opts.NodeName), pc, nil
}

// holderLocked is the prepared claim that holds pd's RDMA device: under pd's name, or
// under another name (one from before a restart) with the same ibdev or uverbs device.
// An admin-access allocation holds nothing.
func (d *Driver) holderLocked(pd PortDevice) (preparedClaim, bool) {
	for _, pc := range d.prepared {
		for _, a := range pc.Devices {
			if !a.Admin && (a.Device == pd.Name || a.IBDev == pd.Dev.Name || (a.UVerbs != "" && a.UVerbs == pd.Dev.UVerbs)) {
				return pc, true
			}
		}
	}
	return preparedClaim{}, false
}

func prepareResult(pc preparedClaim, pool string) kubeletplugin.PrepareResult {
	var res kubeletplugin.PrepareResult
	for _, a := range pc.Devices {
		res.Devices = append(res.Devices, kubeletplugin.Device{
			Requests: []string{a.Request}, PoolName: pool, DeviceName: a.Device,
			CDIDeviceIDs: []string{CDIDeviceID(pc.UID, a.Device)},
		})
	}
	return res
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin: it removes each claim's
// CDI spec; a claim that is not prepared is not an error. The prepared claims are read
// from the CDI directory first (a claim may have been prepared by the other instance
// of a rolling update).
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	defer d.metrics.since(opUnprepare, time.Now())
	out := map[types.UID]error{}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.loadPreparedLocked(); err != nil {
		return nil, err
	}
	defer d.updateHealthLocked()
	for _, c := range claims {
		err := removeSpec(d.opts.CDIDir, c.UID)
		d.metrics.claim(opUnprepare, err)
		if err != nil {
			out[c.UID] = err
			continue
		}
		delete(d.prepared, c.UID)
		d.untrackLinks(c.UID)
		out[c.UID] = nil
	}
	return out, nil
}

// HandleError implements kubeletplugin.DRAPlugin: background errors are logged and
// counted; the helper retries recoverable ones (publishing slices), and any other (a
// gRPC server that failed) ends Run with that error, so the pod restarts and says why.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	fatal := !errors.Is(err, kubeletplugin.ErrRecoverable)
	d.metrics.errors.WithLabelValues(strconv.FormatBool(fatal)).Inc()
	d.log.Error(err, msg, "fatal", fatal)
	if !fatal {
		return
	}
	d.mu.Lock()
	stop := d.fatal
	d.mu.Unlock()
	if stop != nil {
		stop(fmt.Errorf("%s: %w", msg, err))
	}
}

// DeviceData is what the driver writes into the claim's status.devices[].data: the
// device and its primary port, and for a multi-port device every ACTIVE port.
type DeviceData struct {
	IBDev string `json:"ibdev"`
	PortData
	Ports []PortData `json:"ports,omitempty"`
}

// PortData is a port and the GID chosen for it.
type PortData struct {
	Port        int    `json:"port"`
	GIDIndex    *int   `json:"gidIndex,omitempty"`
	GID         string `json:"gid,omitempty"`
	Netdev      string `json:"netdev,omitempty"`
	RoCEVersion string `json:"roceVersion,omitempty"`
	GIDReason   string `json:"gidReason"`
}

// deviceData is a device's status data.
func deviceData(p PortDevice) DeviceData {
	dd := DeviceData{IBDev: p.Dev.Name, PortData: portData(p.PortChoice)}
	for _, c := range p.Ports {
		dd.Ports = append(dd.Ports, portData(c))
	}
	return dd
}

func portData(c PortChoice) PortData {
	pd := PortData{Port: c.Port.Num, Netdev: c.Netdev(), GIDReason: c.GIDReason}
	if c.GID != nil {
		pd.GIDIndex = &c.GID.Index
		pd.GID = c.Env[plugin.EnvGID]
		pd.RoCEVersion = c.Env[plugin.EnvRoCEVersion]
	}
	return pd
}

// writeStatus applies the claim's status.devices entries of this driver (server-side
// apply, field manager DriverName): the chosen device, GID and netdev as data. There is
// no networkData: KEP-4817 means the interface as the pod sees it, and the netdev stays
// in the host's network namespace (its name, addresses and MAC are host facts).
func (d *Driver) writeStatus(ctx context.Context, pc preparedClaim) error {
	d.mu.Lock()
	st := resourceapply.ResourceClaimStatus()
	for _, a := range pc.Devices {
		p, ok := d.devices[a.Device]
		if !ok {
			continue
		}
		raw, err := json.Marshal(deviceData(p))
		if err != nil {
			d.mu.Unlock()
			return fmt.Errorf("encode device data: %w", err)
		}
		st.WithDevices(resourceapply.AllocatedDeviceStatus().WithDriver(DriverName).WithPool(d.opts.NodeName).WithDevice(a.Device).
			WithData(runtimeRaw(raw)))
	}
	d.mu.Unlock()
	ac := resourceapply.ResourceClaim(pc.Name, pc.Namespace).WithStatus(st)
	if _, err := d.opts.Client.ResourceV1().ResourceClaims(pc.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: DriverName, Force: true}); err != nil {
		return fmt.Errorf("apply status of claim %s/%s: %w", pc.Namespace, pc.Name, err)
	}
	return nil
}
