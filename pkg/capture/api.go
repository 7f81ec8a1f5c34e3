package capture

import (
	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
)

// The receiver's API made of its stages' types, under the names its callers
// know.
type (
	// BlockWriter is what the receiver needs from the ring's writer.
	BlockWriter = ring.BlockWriter
	// RingGeometry is the shape of the ring the receiver fills.
	RingGeometry = ring.Geometry
	// DadaWriter adapts a pkg/dada Writer to BlockWriter.
	DadaWriter = ring.DadaWriter
	// ObservationHeaders builds each observation's header.
	ObservationHeaders = obsheader.Builder
	// Tracker holds the live status and the metrics of a receiver.
	Tracker = status.Tracker
)

// RingGeometryOf returns the geometry of a ring's data blocks.
var RingGeometryOf = ring.GeometryOf

// StatusHeaderKeys are the keywords of the current observation's header that
// the status's Header reports.
var StatusHeaderKeys = obsheader.StatusKeys

// NewTracker returns a tracker in state Starting.
var NewTracker = status.NewTracker
