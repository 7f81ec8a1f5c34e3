package capture

import (
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// The status document's parts from what the endpoint choice and the fabric
// report. This is the one place that knows both their types and the
// document's: the adapters and the endpoint package do not import statusdoc
// (a depguard rule), so renaming a status field changes this file only.

// statusEndpoint is the document's endpoint for a listen choice; without an
// RDMA device (ofi opens its own domain) the GID index is null.
func statusEndpoint(ch endpoint.Choice) statusdoc.Endpoint {
	ep := statusdoc.Endpoint{Address: ch.Host, Port: ch.Port, AddressReason: ch.AddressReason, AllowedSenders: ch.Senders.Networks()}
	if rd := ch.RDMA; rd != nil {
		ep.Device, ep.IBPort, ep.GIDIndex = rd.Device, rd.Port, new(rd.GIDIndex)
		ep.GID, ep.Netdev, ep.GIDReason = rd.GID, rd.Netdev, rd.Reason
	}
	return ep
}

// statusRegistration is the document's memory registration.
func statusRegistration(r fabric.Registered) statusdoc.MemoryRegistration {
	return statusdoc.MemoryRegistration{Mode: r.Mode.String(), Regions: r.Regions, Bytes: r.Bytes, Reason: r.Reason}
}
