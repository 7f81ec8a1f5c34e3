package devices

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Ringcap's transfer modes, as `ringcap recv|send --mode` spells them.
const (
	ModeWrite = "write"
	ModeSend  = "send"
)

// Report is what this host offers ringcap.
type Report struct {
	// Verbs are the RDMA devices found in sysfs, by name.
	Verbs []VerbsDevice `json:"verbs"`
	// Skipped are devices, ports or GID entries discovery left out, with the reason.
	Skipped []string `json:"skipped,omitempty"`
	// OFI is what libfabric offers.
	OFI OFIReport `json:"ofi"`
}

// VerbsDevice is one RDMA device.
type VerbsDevice struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	UVerbs string `json:"uverbs,omitempty"`
	// Modes are the ringcap modes `--transport verbs` can run on the device; Note says
	// why there are none, or what to use instead.
	Modes []string    `json:"modes"`
	Note  string      `json:"note,omitempty"`
	Ports []VerbsPort `json:"ports"`
}

// VerbsPort is one port with the GID a receiver would choose by default.
type VerbsPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"linkLayer"`
	// GIDIndex and GID are the default choice (RoCE v2 with an IPv4-mapped address; the
	// port GID on InfiniBand); nil and empty when there is none, and GIDReason says why
	// ("no GID table" when the port has none).
	GIDIndex  *int   `json:"gidIndex,omitempty"`
	GID       string `json:"gid,omitempty"`
	GIDReason string `json:"gidReason"`
}

// OFIReport is what libfabric offers for FI_EP_RDM endpoints.
type OFIReport struct {
	// Available is false when this build has no libfabric (no cgo, not Linux) or
	// fi_getinfo failed; Error says which.
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
	// Providers are the provider/domain pairs, in libfabric's order of preference:
	// those offered without an address first, then those offered only when bound to
	// a verbs port's address (Node).
	Providers []OFIProvider `json:"providers"`
	// Skipped are the addresses whose questions failed, with the error.
	Skipped []string `json:"skipped,omitempty"`
}

// OFIProvider is one provider on one domain.
type OFIProvider struct {
	Provider string `json:"provider"`
	Fabric   string `json:"fabric"`
	Domain   string `json:"domain"`
	// Node is the local address fi_getinfo was asked to bind to when the provider
	// offered the domain only then (verbs;ofi_rxm: see boundAddrs); empty otherwise.
	Node string `json:"node,omitempty"`
	// LocalOnly: the provider reaches processes on this host only (no FI_REMOTE_COMM).
	LocalOnly    bool   `json:"localOnly,omitempty"`
	RMA          bool   `json:"rma"`
	Msg          bool   `json:"msg"`
	RemoteCQData bool   `json:"remoteCQData"` // cq_data_size > 0
	CQDataSize   int    `json:"cqDataSize"`
	MRMode       string `json:"mrMode"`
	ModeBits     string `json:"modeBits"` // fi_info mode: what the provider asks of ringcap
	MaxMsgSize   uint64 `json:"maxMessageBytes"`
	// Modes are the ringcap modes `--transport ofi --ofi-provider PROVIDER` can run;
	// Missing says what the others lack.
	Modes   []string `json:"modes"`
	Missing string   `json:"missing,omitempty"`
}

// Discoverer runs fi_getinfo: ofi.Discover in production.
type Discoverer func(ofi.Hints) ([]ofi.Info, error)

// Collect discovers the verbs devices under roots and the libfabric providers through
// discover. Only a sysfs that cannot be read is an error: libfabric missing or offering
// nothing is part of the report.
func Collect(roots rdma.Roots, discover Discoverer) (*Report, error) {
	devs, skipped, err := rdma.Discover(roots)
	if err != nil {
		return nil, fmt.Errorf("discover verbs devices: %w", err)
	}
	r := &Report{Verbs: []VerbsDevice{}, OFI: collectOFI(discover, boundAddrs(devs))}
	for _, d := range devs {
		r.Verbs = append(r.Verbs, verbsDevice(d))
	}
	for _, s := range skipped {
		r.Skipped = append(r.Skipped, s.String())
	}
	return r, nil
}

func verbsDevice(d rdma.Device) VerbsDevice {
	v := VerbsDevice{Name: d.Name, Driver: d.Driver, UVerbs: d.UVerbs, Ports: []VerbsPort{}}
	v.Modes, v.Note = VerbsModes(d)
	for _, p := range d.Ports {
		v.Ports = append(v.Ports, verbsPort(d, p))
	}
	return v
}

// VerbsModes are the modes `--transport verbs` can run on d: both over RC queue pairs,
// which an AWS EFA does not have.
func VerbsModes(d rdma.Device) ([]string, string) {
	if d.EFA() {
		return []string{}, "EFA has no RC queue pairs: use --transport ofi --ofi-provider efa --ofi-domain " + d.Name + "-rdm"
	}
	if d.UVerbs == "" {
		return []string{}, "no uverbs character device (is ib_uverbs loaded?)"
	}
	return []string{ModeWrite, ModeSend}, ""
}

func verbsPort(d rdma.Device, p rdma.Port) VerbsPort {
	vp := VerbsPort{Port: p.Num, State: p.State, LinkLayer: p.LinkLayer}
	switch {
	case d.EFA():
		vp.GIDReason = "EFA: no RoCE GID is used (libfabric's efa provider addresses the device)"
	case len(p.GIDs) == 0:
		vp.GIDReason = "no GID table"
	default:
		g, why, err := rdma.ChooseGID(p, rdma.GIDPolicy{})
		if err != nil {
			vp.GIDReason = err.Error()
			break
		}
		vp.GIDIndex, vp.GID, vp.GIDReason = &g.Index, g.GID.String(), why
	}
	return vp
}

// The capabilities ringcap asks libfabric about, in turn: RMA with remote
// communication, RMA on this host only (shm), messages alone (to list the providers
// without RMA too). fi_getinfo reports the capabilities asked for, so each provider is
// described by the first question it answers.
var questions = []struct {
	hints      ofi.Hints
	localOnly  bool
	reportsRMA bool
}{
	{ofi.Hints{Caps: ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm}, false, true},
	{ofi.Hints{Caps: ofi.CapMsg | ofi.CapRMA}, true, true},
	{ofi.Hints{Caps: ofi.CapMsg}, false, false},
}

func collectOFI(discover Discoverer, addrs []string) OFIReport {
	rep := OFIReport{Available: true, Providers: []OFIProvider{}}
	seen := map[string]bool{}
	if err := ask(discover, "", seen, &rep); err != nil {
		return failed(err)
	}
	for _, a := range addrs {
		err := ask(discover, a, seen, &rep)
		if errors.Is(err, ofi.ErrNotSupported) {
			return failed(err)
		}
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("bound to %s: %v", a, err))
		}
	}
	return rep
}

// failed is the report of a discovery that could not run.
func failed(err error) OFIReport {
	if errors.Is(err, ofi.ErrNotSupported) {
		return OFIReport{Error: "libfabric is not available: " + err.Error(), Providers: []OFIProvider{}}
	}
	return OFIReport{Error: err.Error(), Providers: []OFIProvider{}}
}

// ask puts the questions, bound to node when it is set, and adds the provider/domain
// pairs not yet seen to rep.
func ask(discover Discoverer, node string, seen map[string]bool, rep *OFIReport) error {
	for _, q := range questions {
		h := q.hints
		h.Node, h.Source = node, node != ""
		infos, err := discover(h)
		switch {
		case noMatch(err):
			continue
		case err != nil:
			return err
		}
		for _, i := range infos {
			k := i.Provider + "\x00" + i.Domain
			if !seen[k] {
				seen[k] = true
				p := ofiProvider(i, q.localOnly)
				p.Node = node
				rep.Providers = append(rep.Providers, p)
			}
		}
	}
	return nil
}

// boundAddrs are the IPv4 addresses of the active RoCE ports' RoCE v2 GIDs, each once.
// libfabric's verbs provider (1.17) offers its FI_EP_MSG domains, and so
// verbs;ofi_rxm, only for a source address it can resolve: asked without one it
// resolves the host name through rdma_getaddrinfo, which fails where the host name
// does not resolve (the Soft-RoCE VM: host name "(none)", no /etc/hosts;
// "rdma_getaddrinfo: Resource temporarily unavailable"), and only verbs;ofi_rxd's
// datagram domains are listed. Bound to a port's address it offers that device's
// domain, as `ringcap recv --transport ofi --listen ADDR` opens it.
func boundAddrs(devs []rdma.Device) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range devs {
		for _, p := range d.Ports {
			if !p.Active() || !p.RoCE() {
				continue
			}
			for _, g := range p.GIDs {
				v4 := g.GID.To4()
				if g.Type != rdma.GIDTypeRoCEv2 || v4 == nil || seen[v4.String()] {
					continue
				}
				seen[v4.String()] = true
				out = append(out, v4.String())
			}
		}
	}
	return out
}

// enodata is FI_ENODATA: fi_getinfo found no provider for the hints.
const enodata = 61

func noMatch(err error) bool {
	var ce *ofi.CallError
	return errors.As(err, &ce) && ce.Errno == enodata
}

func ofiProvider(i ofi.Info, localOnly bool) OFIProvider {
	p := OFIProvider{
		Provider: i.Provider, Fabric: i.Fabric, Domain: i.Domain, LocalOnly: localOnly,
		RMA: i.Caps&ofi.CapRMA != 0, Msg: i.Caps&ofi.CapMsg != 0, RemoteCQData: i.CQDataSize > 0, CQDataSize: i.CQDataSize,
		MRMode: i.MRMode.String(), ModeBits: i.Mode.String(), MaxMsgSize: i.MaxMsgSize,
	}
	p.Modes, p.Missing = OFIModes(p.RMA, p.Msg, p.RemoteCQData)
	if localOnly {
		p.Missing = strings.TrimPrefix(p.Missing+"; no FI_REMOTE_COMM: sender and receiver on this host only", "; ")
	}
	return p
}

// OFIModes are the modes a libfabric provider can run: write needs RMA and remote CQ
// data, send needs messages and remote CQ data. missing names what the others lack.
func OFIModes(rma, msg, cqData bool) (modes []string, missing string) {
	modes = []string{}
	var lacks []string
	check := func(mode string, needs map[string]bool) {
		var no []string
		for _, what := range []string{"FI_RMA", "FI_MSG", "remote CQ data"} {
			if ok, needed := needs[what]; needed && !ok {
				no = append(no, what)
			}
		}
		if len(no) == 0 {
			modes = append(modes, mode)
			return
		}
		lacks = append(lacks, mode+": no "+strings.Join(no, ", no "))
	}
	check(ModeWrite, map[string]bool{"FI_RMA": rma, "remote CQ data": cqData})
	check(ModeSend, map[string]bool{"FI_MSG": msg, "remote CQ data": cqData})
	return modes, strings.Join(lacks, "; ")
}
