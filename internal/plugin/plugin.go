package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// Options configure a Plugin.
type Options struct {
	Config     *Config    // nil: DefaultConfig()
	Roots      rdma.Roots // sysfs and /dev roots
	KubeletDir string     // the kubelet's device-plugins directory (holds kubelet.sock)
	NodeName   string     // for the inventory; may be empty when Inventory is nil
	CDIDir     string     // write CDI specs here and name CDI devices in Allocate; "" disables CDI
	Log        logr.Logger
	// Registry receives the plugin's metrics; nil: a private registry.
	Registry prometheus.Registerer
	// Inventory receives the node's inventory after every change; nil: not published.
	Inventory InventorySink
	// Version is reported in the inventory.
	Version string
	// OtherConfig is the DRA driver's config when both run on the node (plugin.mode both):
	// a device both configs select refuses Run, or is left out when it appears later.
	OtherConfig *Config
	// Memlock reads the memlock limit containers get on this node, for the inventory;
	// nil: the process's own RLIMIT_MEMLOCK (the plugin runs as a container there).
	Memlock func() (*ringcapv1alpha1.MemlockLimit, error)
	// PodResourcesSocket is the kubelet's PodResources API socket
	// (DefaultPodResourcesSocket): the plugin asks it which pods hold its device IDs and
	// exports their ports' counters per capture (ringcap_capture_link_increase_total).
	// "" turns that off. A socket that is missing or refuses is logged once and counted.
	PodResourcesSocket string
	// PodResourcesInterval is how often it is asked; 0: DefaultPodResourcesInterval.
	PodResourcesInterval time.Duration
	// Pods reads the ringcap.io/capture label of the pods holding devices, for the
	// capture label of those series; nil: the label is empty.
	Pods kubernetes.Interface
}

// InventoryResync is how often the inventory is published even when nothing changed.
const InventoryResync = 5 * time.Minute

// Plugin serves one device-plugin endpoint per pool and keeps them current.
type Plugin struct {
	opts    Options
	log     logr.Logger
	cfg     *Config
	pools   []*poolServer
	metrics *metrics
	links   *captureLinks // nil: per-capture link counters off
	// containerMemlock is the inventory's containerMemlock, read once by New.
	containerMemlock *ringcapv1alpha1.MemlockLimit

	mu          sync.Mutex
	devs        []rdma.Device
	skipped     []rdma.Skipped
	lastSkipped map[string]bool
	lastOverlap map[string]bool // devices left out as selected by the other config (each logged once)
	inv         *Inventory      // last built inventory
	invDirty    bool            // inv not yet accepted by the sink
	published   time.Time       // when the sink last accepted an inventory
	scanned     chan struct{}

	runMu   sync.Mutex
	running bool
}

// New checks the options and the config and makes a Plugin; Run starts it.
func New(opts Options) (*Plugin, error) {
	if opts.Config == nil {
		opts.Config = DefaultConfig()
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if opts.OtherConfig != nil {
		if err := opts.OtherConfig.Validate(); err != nil {
			return nil, fmt.Errorf("other config (the DRA driver's): %w", err)
		}
	}
	if opts.KubeletDir == "" {
		return nil, errors.New("no kubelet device-plugins directory")
	}
	if opts.Roots.Sys == "" || opts.Roots.Dev == "" {
		return nil, errors.New("sysfs and /dev roots must be set")
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	p := &Plugin{opts: opts, log: opts.Log, cfg: opts.Config, metrics: m, lastSkipped: map[string]bool{}, lastOverlap: map[string]bool{}, scanned: make(chan struct{}),
		containerMemlock: readMemlock(opts)}
	for _, pc := range opts.Config.Pools {
		p.pools = append(p.pools, newPoolServer(p, pc))
	}
	if err := reg.Register(linkmetrics.NewCollector(opts.Roots, p.linkPorts)); err != nil {
		return nil, fmt.Errorf("register link counters: %w", err)
	}
	if p.links, err = newCaptureLinks(opts, reg, p.unitPorts); err != nil {
		return nil, err
	}
	return p, nil
}

// Resources are the extended resource names the plugin advertises.
func (p *Plugin) Resources() []string {
	var out []string
	for _, s := range p.pools {
		out = append(out, s.resource)
	}
	return out
}

// Run scans, serves and registers every pool, then keeps rescanning (every
// RescanInterval), re-registers when the kubelet restarts, and publishes the
// inventory, until ctx is done; then it stops the servers and removes their sockets.
// A config that selects a device for an exclusive pool and another pool, or a device
// that the DRA driver's config (Options.OtherConfig) selects too, is refused before
// anything is served.
func (p *Plugin) Run(ctx context.Context) error {
	p.runMu.Lock()
	if p.running {
		p.runMu.Unlock()
		return errors.New("plugin already running")
	}
	p.running = true
	p.runMu.Unlock()

	if err := p.refuseOverlaps(); err != nil {
		return err
	}
	if err := p.Rescan(); err != nil {
		return err
	}
	if err := os.MkdirAll(p.opts.KubeletDir, 0o755); err != nil {
		return fmt.Errorf("create kubelet device-plugins directory: %w", err)
	}
	defer func() {
		for _, s := range p.pools {
			s.stop()
		}
		p.log.Info("Stopped: sockets removed")
	}()
	for _, s := range p.pools {
		if err := s.start(); err != nil {
			return err
		}
	}

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch the kubelet directory: %w", err)
	}
	defer func() { _ = w.Close() }()
	if err := w.Add(p.opts.KubeletDir); err != nil {
		return fmt.Errorf("watch %s: %w", p.opts.KubeletDir, err)
	}
	p.log.Info("Serving", "resources", p.Resources(), "kubeletDir", p.opts.KubeletDir, "rescanInterval", p.cfg.RescanInterval.Duration)
	defer p.startCaptureLinks(ctx)()
	return p.serve(ctx, w)
}

// serve keeps the endpoints registered and the inventory published until ctx is done:
// at once, when the kubelet restarts or an endpoint's socket goes, and every rescan interval.
func (p *Plugin) serve(ctx context.Context, w *fsnotify.Watcher) error {
	p.reconcileEndpoints(ctx)
	p.publish(ctx)
	tick := time.NewTicker(p.cfg.RescanInterval.Duration)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("kubelet directory watcher closed")
			}
			if kubeletRestartedOrSocketGone(ev) {
				p.reconcileEndpoints(ctx)
			}
		case err, ok := <-w.Errors:
			if ok {
				p.log.Error(err, "Watching the kubelet directory")
			}
		case <-tick.C:
			if err := p.Rescan(); err != nil {
				p.log.Error(err, "Rescan")
			}
			p.reconcileEndpoints(ctx)
			p.publish(ctx)
		}
	}
}

// startCaptureLinks keeps the per-capture link series current in the background until
// the returned func is called (it waits for that to end).
func (p *Plugin) startCaptureLinks(ctx context.Context) (stop func()) {
	if p.links == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.links.run(ctx)
	}()
	p.log.Info("Exporting per-capture link counters", "podResourcesSocket", p.opts.PodResourcesSocket)
	return func() {
		cancel()
		<-done
	}
}

// kubeletRestartedOrSocketGone: the kubelet's socket was created, or one of ours removed.
func kubeletRestartedOrSocketGone(ev fsnotify.Event) bool {
	base := filepath.Base(ev.Name)
	return (base == "kubelet.sock" && ev.Has(fsnotify.Create)) || (strings.HasPrefix(base, "ringcap-") && ev.Has(fsnotify.Remove))
}

// reconcileEndpoints restarts and (re-)registers every pool endpoint that needs it.
func (p *Plugin) reconcileEndpoints(ctx context.Context) {
	for _, s := range p.pools {
		why := s.needsRestart()
		if why == "" {
			continue
		}
		if why != "not registered" {
			p.log.Info("Restarting endpoint", "resource", s.resource, "why", why)
			if err := s.start(); err != nil {
				p.log.Error(err, "Restart endpoint", "resource", s.resource)
				continue
			}
		}
		if err := s.register(ctx); err != nil {
			p.metrics.registrationErrors.WithLabelValues(s.resource).Inc()
			p.log.V(1).Info("Not registered yet", "resource", s.resource, "error", err.Error())
			continue
		}
		p.metrics.registrations.WithLabelValues(s.resource).Inc()
		p.log.Info("Registered with the kubelet", "resource", s.resource, "endpoint", filepath.Base(s.socket))
	}
}

// Rescan reads sysfs now and updates every pool (ListAndWatch streams, Allocate
// answers, CDI specs, metrics, the inventory to publish).
func (p *Plugin) Rescan() error {
	start := time.Now()
	devs, skipped, err := rdma.Discover(p.opts.Roots)
	p.metrics.scanSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		p.metrics.scanErrors.Inc()
		return fmt.Errorf("discover RDMA devices: %w", err)
	}
	p.logSkipped(skipped)
	ov := p.cfg.Overlaps(p.opts.OtherConfig, devs)
	p.logOverlaps(ov)
	for _, o := range ov {
		skipped = append(skipped, rdma.Skipped{Device: o.Device, Reason: o.Reason(SideDRA)})
	}
	assigned, err := p.cfg.Assign(WithoutOverlaps(devs, ov))
	if err != nil {
		p.metrics.scanErrors.Inc()
		return fmt.Errorf("config: %w", err)
	}
	for _, s := range p.pools {
		ps := newPoolState(s.cfg, assigned[s.cfg.Name])
		s.setState(ps)
		p.metrics.observePool(s.resource, ps)
		if p.opts.CDIDir != "" {
			if err := writeCDISpec(p.opts.CDIDir, s.cfg, ps); err != nil {
				p.log.Error(err, "Write CDI spec", "resource", s.resource)
			}
		}
	}
	inv := p.buildInventory(devs, skipped)
	p.mu.Lock()
	p.devs, p.skipped = devs, skipped
	if p.inv == nil || !p.inv.equal(inv) {
		p.inv, p.invDirty = inv, true
	}
	close(p.scanned)
	p.scanned = make(chan struct{})
	p.mu.Unlock()
	return nil
}

// linkPorts are the ports of every device the last scan found, for the link counters:
// those the DRA driver's config selects included, as the driver exports none when both
// run on the node (its Options.OtherConfig set).
func (p *Plugin) linkPorts() []linkmetrics.Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	return linkmetrics.Ports(p.devs)
}

// Scanned returns a channel closed after the next completed scan.
func (p *Plugin) Scanned() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scanned
}

func (p *Plugin) logSkipped(skipped []rdma.Skipped) {
	now := map[string]bool{}
	for _, s := range skipped {
		k := s.String()
		now[k] = true
		if !p.lastSkipped[k] {
			p.log.Info("Skipped", "device", s.Device, "port", s.Port, "attribute", s.Attr, "reason", s.Reason)
		}
	}
	p.lastSkipped = now
}

// refuseOverlaps fails when the DRA driver's config selects a device this plugin's
// config selects too.
func (p *Plugin) refuseOverlaps() error {
	if p.opts.OtherConfig == nil {
		return nil
	}
	devs, _, err := rdma.Discover(p.opts.Roots)
	if err != nil {
		return fmt.Errorf("discover RDMA devices: %w", err)
	}
	return RefuseOverlaps(p.cfg, p.opts.OtherConfig, devs, SideDevicePlugin, SideDRA)
}

// logOverlaps logs each device newly left out as the DRA driver's config selects it too.
func (p *Plugin) logOverlaps(ov []Overlap) {
	now := map[string]bool{}
	for _, o := range ov {
		now[o.Device] = true
		if !p.lastOverlap[o.Device] {
			p.log.Info("Device left out", "device", o.Device, "pool", o.Pool, "reason", o.Reason(SideDRA))
		}
	}
	p.lastOverlap = now
}

// publish hands a changed inventory to the sink; on failure it retries next scan.
func (p *Plugin) publish(ctx context.Context) {
	if p.opts.Inventory == nil {
		return
	}
	p.mu.Lock()
	inv, dirty := p.inv, p.invDirty
	// Republish now and then even without a change: someone may have deleted the
	// RDMANode or the labels.
	dirty = dirty || time.Since(p.published) > InventoryResync
	p.mu.Unlock()
	if !dirty || inv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.opts.Inventory.Publish(ctx, inv); err != nil {
		p.metrics.inventoryErrors.Inc()
		p.log.Error(err, "Publish inventory (retrying at the next scan)")
		return
	}
	p.mu.Lock()
	if p.inv == inv {
		p.invDirty = false
	}
	p.published = time.Now()
	p.mu.Unlock()
	p.log.V(1).Info("Published inventory", "node", p.opts.NodeName)
}

// fileID identifies a file (device and inode), to notice a recreated kubelet.sock.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("stat %s: no inode", path)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil //nolint:unconvert // Dev is uint32 on some platforms
}
