package sender

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// OpenFabric opens the fabric a stream goes over on the chosen device, for
// the transfer mode, with send buffers of bufBytes (see SendBufferBytes).
type OpenFabric func(dev fabric.DeviceConfig, mode wire.Mode, bufBytes uint64) (fabric.SenderFabric, error)

// Stream is everything one sender run needs besides its command line: the
// receiver to connect to, the stream, the device request and the fabric.
type Stream struct {
	// Connect is the receiver's HOST:PORT.
	Connect string
	Config  Config
	// Device is what was asked for; its IP is the local address toward
	// Connect, found by Run.
	Device endpoint.Request
	// Roots is where the RDMA devices are discovered (rdma.DefaultRoots).
	Roots rdma.Roots
	// Fabric is the transport (zero: verbs). With ofi no RDMA device is
	// chosen: the fabric opens Fabric.Provider (empty: the receiver's, as
	// its Settings say) on Domain (empty: the first fi_getinfo offers).
	Fabric wire.Fabric
	Domain string
	// Open opens the fabric, e.g. verbsfabric.NewSender.
	Open OpenFabric
	// Posting, when set, chooses Config.Pin and Config.PostCPUs once the
	// device's driver (software RDMA wants other posting than a NIC) and the
	// number of queue pairs are known.
	Posting *PostingPolicy
}

// Run streams to the receiver: it chooses the device toward the receiver,
// connects and takes the receiver's settings where the configuration leaves
// them zero (see Connect), opens the fabric and streams. It closes what it
// opened.
func Run(ctx context.Context, s Stream) (Result, error) {
	given := s.Config
	given.defaults()
	if err := given.validateGiven(); err != nil {
		return Result{}, err
	}
	posting, err := s.posting(given.QPs)
	if err != nil {
		return Result{}, err
	}
	dev, err := s.chooseDevice(given.Log)
	if err != nil {
		return Result{}, err
	}
	l, cfg, err := Connect(ctx, s.Connect, s.Config)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = l.Close() }()
	if s.Fabric.Transport == wire.TransportOFI {
		dev.cfg.Provider = cmp.Or(s.Fabric.Provider, l.Settings.Fabric.Provider)
		cfg.Log.Info("Chose the libfabric provider", "provider", cmp.Or(dev.cfg.Provider, "(the first fi_getinfo offers)"), "domain", dev.cfg.Domain, "receiver", l.Settings.Fabric)
	}
	if posting != nil {
		if cfg.Pin, cfg.PostCPUs, err = posting.Resolve(dev.driver, cfg.QPs); err != nil {
			return Result{}, err
		}
	}
	devCfg := dev.cfg
	fab, err := s.Open(devCfg, cfg.Mode, SendBufferBytes(cfg))
	if err != nil {
		return Result{}, err
	}
	defer fabric.CloseLogged(cfg.Log, "the sender's fabric", fab)
	res, err := l.Stream(ctx, cfg, fab)
	if res.QPs == 0 { // it failed before the stream: say what was agreed
		res.QPs, res.Mode = cfg.QPs, cfg.Mode
	}
	res.Fabric = fab.Fabric()
	return res, err
}

// posting is the stream's posting policy with the CPUs the process may use
// (nil without one), checked before anything is connected: auto is resolved
// once the device and the queue pairs are known.
func (s Stream) posting(qps int) (*PostingPolicy, error) {
	if s.Posting == nil {
		return nil, nil
	}
	p := *s.Posting
	if p.Allowed == nil {
		allowed, err := AllowedCPUs()
		if err != nil {
			return nil, err
		}
		p.Allowed = allowed
	}
	return &p, p.Check(qps)
}

// device is what the fabric opens: an RDMA device toward the receiver
// (verbs), or a libfabric domain.
type device struct {
	cfg    fabric.DeviceConfig
	driver string // the RDMA device's kernel driver (ofi: the domain's, see domainDriver)
}

// chooseDevice finds the RDMA device toward the receiver (verbs) or takes
// the libfabric domain (ofi).
func (s Stream) chooseDevice(log *slog.Logger) (device, error) {
	if err := s.checkFabric(); err != nil {
		return device{}, err
	}
	if s.Fabric.Transport == wire.TransportOFI {
		return device{cfg: fabric.DeviceConfig{Provider: s.Fabric.Provider, Domain: s.Domain}, driver: domainDriver(s.Roots, s.Domain)}, nil
	}
	local, err := localAddrFor(s.Connect)
	if err != nil {
		return device{}, err
	}
	req := s.Device
	req.IP = local
	devCfg, ep, devs, err := endpoint.Find(s.Roots, req)
	if err != nil {
		return device{}, err
	}
	log.Info("Chose RDMA endpoint", "device", ep.Device, "port", ep.Port, "gidIndex", devCfg.GIDIndex, "gid", ep.GID, "netdev", ep.Netdev, "reason", ep.Reason)
	return device{cfg: devCfg, driver: driverOf(devs, ep.Device)}, nil
}

// checkFabric refuses an unknown transport, and a provider or domain with
// verbs.
func (s Stream) checkFabric() error {
	switch s.Fabric.Transport {
	case 0, wire.TransportVerbs:
		if s.Fabric.Provider != "" || s.Domain != "" {
			return fmt.Errorf("a libfabric provider (%q) or domain (%q) with the verbs transport: give --transport ofi", s.Fabric.Provider, s.Domain)
		}
	case wire.TransportOFI:
		if s.Fabric.Provider != "" {
			return (wire.Fabric{Transport: wire.TransportOFI, Provider: s.Fabric.Provider}).Validate()
		}
	default:
		return fmt.Errorf("unknown transport %v", s.Fabric.Transport)
	}
	return nil
}

// domainDriver is the kernel driver of the RDMA device a libfabric domain
// names (verbs;ofi_rxm's domains are verbs devices, such as rxe0), so that
// posting is chosen as for verbs on it: on a software device a thread per
// CPU, each posting to and reading the completion queues of its endpoints
// (ofifabric's posting threads), which moved twice the bytes of one thread
// over verbs;ofi_rxm on rxe (bench-ofi's ofi-verbs-t2); "" for any other
// domain (tcp's netdevs, efa's "-rdm" names) or none given.
func domainDriver(r rdma.Roots, domain string) string {
	if domain == "" {
		return ""
	}
	devs, _, err := rdma.Discover(r)
	if err != nil {
		return ""
	}
	return driverOf(devs, domain)
}

// driverOf is the kernel driver of the device named name.
func driverOf(devs []rdma.Device, name string) string {
	for _, d := range devs {
		if d.Name == name {
			return d.Driver
		}
	}
	return ""
}

// localAddrFor returns the local IP the kernel would use to reach addr (no
// packet is sent: connecting a UDP socket only picks the route).
func localAddrFor(addr string) (net.IP, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("find the local address toward %s: %w", addr, err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).IP, nil
}
