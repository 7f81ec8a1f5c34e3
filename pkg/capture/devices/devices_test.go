package devices

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

const testdata = "../../rdma/testdata/"

func roots(tree string) rdma.Roots {
	return rdma.Roots{Sys: testdata + tree + "/sys", Dev: testdata + tree + "/dev"}
}

func TestOFIModes(t *testing.T) {
	for _, tc := range []struct {
		rma, msg, cqData bool
		modes            []string
		missing          string
	}{
		{true, true, true, []string{"write", "send"}, ""},
		{false, true, true, []string{"send"}, "write: no FI_RMA"},
		{true, true, false, []string{}, "write: no remote CQ data; send: no remote CQ data"},
		{true, false, true, []string{"write"}, "send: no FI_MSG"},
		{false, false, false, []string{}, "write: no FI_RMA, no remote CQ data; send: no FI_MSG, no remote CQ data"},
	} {
		modes, missing := OFIModes(tc.rma, tc.msg, tc.cqData)
		if !reflect.DeepEqual(modes, tc.modes) || missing != tc.missing {
			t.Errorf("OFIModes(rma %v, msg %v, cq data %v) = %v, %q; want %v, %q", tc.rma, tc.msg, tc.cqData, modes, missing, tc.modes, tc.missing)
		}
	}
}

func TestVerbsModes(t *testing.T) {
	for _, tc := range []struct {
		dev   rdma.Device
		modes []string
		note  string
	}{
		{rdma.Device{Name: "mlx5_0", Driver: "mlx5_core", UVerbs: "/dev/infiniband/uverbs0"}, []string{"write", "send"}, ""},
		{rdma.Device{Name: "rxe0", Driver: "rdma_rxe", UVerbs: "/dev/infiniband/uverbs1"}, []string{"write", "send"}, ""},
		{rdma.Device{Name: "efa_0", Driver: "efa", UVerbs: "/dev/infiniband/uverbs0"}, []string{},
			"EFA has no RC queue pairs: use --transport ofi --ofi-provider efa --ofi-domain efa_0-rdm"},
		{rdma.Device{Name: "mlx5_1", Driver: "mlx5_core"}, []string{}, "no uverbs character device (is ib_uverbs loaded?)"},
	} {
		modes, note := VerbsModes(tc.dev)
		if !reflect.DeepEqual(modes, tc.modes) || note != tc.note {
			t.Errorf("VerbsModes(%s) = %v, %q; want %v, %q", tc.dev.Name, modes, note, tc.modes, tc.note)
		}
	}
}

// collectWith runs Collect over the PCI tree with a discover function that answers
// each question (by its caps) from answers.
func collectWith(t *testing.T, answers map[ofi.Caps]func() ([]ofi.Info, error)) OFIReport {
	t.Helper()
	r, err := Collect(roots("pci"), func(h ofi.Hints) ([]ofi.Info, error) {
		if a, ok := answers[h.Caps]; ok {
			return a()
		}
		return nil, &ofi.CallError{Call: "fi_getinfo", Errno: enodata, Text: "No data available"}
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.OFI
}

// How fi_getinfo's answers become the report: libfabric missing, an error, nothing to
// offer, and each provider described by the first question it answers.
func TestCollectOFIAnswers(t *testing.T) {
	twin := func() ([]ofi.Info, error) { return nil, ofi.ErrNotSupported }
	if rep := collectWith(t, map[ofi.Caps]func() ([]ofi.Info, error){ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm: twin}); rep.Available ||
		!strings.Contains(rep.Error, "libfabric is not available") || len(rep.Providers) != 0 {
		t.Errorf("without libfabric: %+v", rep)
	}
	broken := func() ([]ofi.Info, error) { return nil, fmt.Errorf("fi_getinfo: %w", errors.New("boom")) }
	if rep := collectWith(t, map[ofi.Caps]func() ([]ofi.Info, error){ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm: broken}); rep.Available ||
		rep.Error != "fi_getinfo: boom" {
		t.Errorf("failing fi_getinfo: %+v", rep)
	}
	if rep := collectWith(t, nil); !rep.Available || len(rep.Providers) != 0 {
		t.Errorf("no provider: %+v", rep)
	}
	tcp := ofi.Info{Provider: "tcp;ofi_rxm", Domain: "lo", Caps: ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm, CQDataSize: 8, MaxMsgSize: 1 << 30}
	shm := ofi.Info{Provider: "shm", Domain: "shm", Caps: ofi.CapMsg | ofi.CapRMA, CQDataSize: 8, MRMode: ofi.MRVirtAddr}
	udp := ofi.Info{Provider: "udp;ofi_rxd", Domain: "lo", Caps: ofi.CapMsg}
	rep := collectWith(t, map[ofi.Caps]func() ([]ofi.Info, error){
		ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm: func() ([]ofi.Info, error) { return []ofi.Info{tcp}, nil },
		ofi.CapMsg | ofi.CapRMA:                     func() ([]ofi.Info, error) { return []ofi.Info{tcp, shm}, nil },
		ofi.CapMsg:                                  func() ([]ofi.Info, error) { return []ofi.Info{tcp, shm, udp}, nil },
	})
	want := []OFIProvider{
		{Provider: "tcp;ofi_rxm", Domain: "lo", RMA: true, Msg: true, RemoteCQData: true, CQDataSize: 8, MRMode: "[]", ModeBits: "[]",
			MaxMsgSize: 1 << 30, Modes: []string{"write", "send"}},
		{Provider: "shm", Domain: "shm", LocalOnly: true, RMA: true, Msg: true, RemoteCQData: true, CQDataSize: 8, MRMode: "[FI_MR_VIRT_ADDR]",
			ModeBits: "[]", Modes: []string{"write", "send"}, Missing: "no FI_REMOTE_COMM: sender and receiver on this host only"},
		{Provider: "udp;ofi_rxd", Domain: "lo", Msg: true, MRMode: "[]", ModeBits: "[]", Modes: []string{},
			Missing: "write: no FI_RMA, no remote CQ data; send: no remote CQ data"},
	}
	if !rep.Available || !reflect.DeepEqual(rep.Providers, want) {
		t.Errorf("providers\n%+v\nwant\n%+v", rep.Providers, want)
	}
}

// The verbs side over the synthetic trees: the PCI tree's devices with their GIDs, and
// the EFA tree's devices with no verbs mode and no GID error.
func TestCollectVerbs(t *testing.T) {
	r, err := Collect(roots("pci"), func(ofi.Hints) ([]ofi.Info, error) { return nil, ofi.ErrNotSupported })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range r.Verbs {
		for _, p := range d.Ports {
			got = append(got, fmt.Sprintf("%s %d %s %s %s %v", d.Name, p.Port, p.State, p.LinkLayer, gidText(p), d.Modes))
		}
	}
	want := []string{
		"mlx5_0 1 ACTIVE Ethernet 3 10.0.0.5 [write send]",
		"mlx5_1 1 DOWN Ethernet none: no RoCE v2 GID with an IPv4-mapped address on enp3s0f1 [write send]",
		"mlx5_2 1 ACTIVE InfiniBand 0 fe80::c42:a103:70:1b2c [write send]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verbs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(r.Skipped) != 2 {
		t.Errorf("skipped %v", r.Skipped)
	}

	r, err = Collect(roots("efa"), func(ofi.Hints) ([]ofi.Info, error) { return nil, ofi.ErrNotSupported })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Verbs) != 2 || len(r.Verbs[0].Modes) != 0 || !strings.Contains(r.Verbs[0].Note, "--ofi-provider efa --ofi-domain efa_0-rdm") ||
		r.Verbs[0].Ports[0].LinkLayer != "Unspecified" || r.Verbs[0].Ports[0].GIDIndex != nil || !strings.HasPrefix(r.Verbs[0].Ports[0].GIDReason, "EFA:") {
		t.Errorf("EFA devices %+v", r.Verbs)
	}

	// No RDMA at all is an empty list, not an error.
	if r, err := Collect(rdma.Roots{Sys: t.TempDir(), Dev: t.TempDir()}, func(ofi.Hints) ([]ofi.Info, error) { return nil, ofi.ErrNotSupported }); err != nil || len(r.Verbs) != 0 {
		t.Errorf("no RDMA: %+v, %v", r, err)
	}
}

// A provider offered only when bound to a RoCE port's address (verbs;ofi_rxm with
// libfabric 1.17 where rdma_getaddrinfo finds no default): the active RoCE v2 IPv4
// addresses are asked, once each, the domain is listed with the address, and a
// failing question for one address is reported without losing the others.
func TestCollectOFIBoundToAddress(t *testing.T) {
	var asked []string
	rxm := ofi.Info{Provider: "verbs;ofi_rxm", Domain: "mlx5_0", Caps: ofi.CapMsg | ofi.CapRMA | ofi.CapRemoteComm, CQDataSize: 4,
		MRMode: ofi.MRLocal | ofi.MRVirtAddr | ofi.MRAllocated | ofi.MRProvKey, MaxMsgSize: 1 << 30}
	r, err := Collect(roots("pci"), func(h ofi.Hints) ([]ofi.Info, error) {
		if h.Node == "" {
			return nil, &ofi.CallError{Call: "fi_getinfo", Errno: enodata, Text: "No data available"}
		}
		asked = append(asked, fmt.Sprintf("%s source=%v caps=%v", h.Node, h.Source, h.Caps))
		if h.Caps != ofi.CapMsg|ofi.CapRMA|ofi.CapRemoteComm {
			return nil, errors.New("only the first question is answered")
		}
		return []ofi.Info{rxm}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// mlx5_0 (ACTIVE) has 10.0.0.5 and 10.100.0.5 as RoCE v2 GIDs (the second on a
	// VLAN); mlx5_1 is DOWN, mlx5_2 InfiniBand. The domain is listed once.
	wantAsked := []string{"10.0.0.5 source=true caps=[FI_MSG FI_RMA FI_REMOTE_COMM]", "10.0.0.5 source=true caps=[FI_MSG FI_RMA]",
		"10.100.0.5 source=true caps=[FI_MSG FI_RMA FI_REMOTE_COMM]", "10.100.0.5 source=true caps=[FI_MSG FI_RMA]"}
	if !reflect.DeepEqual(asked, wantAsked) {
		t.Errorf("asked\n%s\nwant\n%s", strings.Join(asked, "\n"), strings.Join(wantAsked, "\n"))
	}
	want := []OFIProvider{{Provider: "verbs;ofi_rxm", Domain: "mlx5_0", Node: "10.0.0.5", RMA: true, Msg: true, RemoteCQData: true, CQDataSize: 4,
		MRMode: "[FI_MR_LOCAL FI_MR_VIRT_ADDR FI_MR_ALLOCATED FI_MR_PROV_KEY]", ModeBits: "[]", MaxMsgSize: 1 << 30, Modes: []string{"write", "send"}}}
	if !r.OFI.Available || !reflect.DeepEqual(r.OFI.Providers, want) {
		t.Errorf("providers\n%+v\nwant\n%+v", r.OFI.Providers, want)
	}
	if len(r.OFI.Skipped) != 2 || r.OFI.Skipped[1] != "bound to 10.100.0.5: only the first question is answered" {
		t.Errorf("skipped %q", r.OFI.Skipped)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^verbs;ofi_rxm +mlx5_0 +10\.0\.0\.5 +yes +yes +4 bytes .* write, send$`).MatchString(b.String()) ||
		!strings.Contains(b.String(), "skipped: libfabric bound to 10.0.0.5: only the first question is answered") {
		t.Errorf("text:\n%s", b.String())
	}
}
