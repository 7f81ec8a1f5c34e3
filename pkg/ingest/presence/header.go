package presence

import (
	"fmt"
	"strconv"

	"github.com/ringcap/ringcap/pkg/dada"
)

// The header keys a presence ring's header adds to its data ring's header.
const (
	// KeyFormat says what the ring holds: FormatName, one record per block.
	KeyFormat = "RINGCAP_PRESENCE_FORMAT"
	// KeyGranule is the granule in bytes.
	KeyGranule = "RINGCAP_PRESENCE_GRANULE"
	// KeyDataKey is the data ring's key (hex, as dada_db -k).
	KeyDataKey = "RINGCAP_PRESENCE_DATA_KEY"
	// KeyDataBlock is the data ring's block size in bytes.
	KeyDataBlock = "RINGCAP_PRESENCE_DATA_BLOCK_BYTES"
)

// FormatName is KeyFormat's value for records of Version 1.
const FormatName = "ringcap-presence-1"

// Ring describes a presence ring beside its data ring.
type Ring struct {
	DataKey    dada.Key // the data ring's key
	DataBlock  uint64   // the data ring's block size
	Granule    uint64   // bytes per granule
	HeaderSize int      // the header block size (HDR_SIZE)
}

// BlockBytes is the size of the ring's blocks: one record of a whole data
// block.
func (r Ring) BlockBytes() uint64 { return Bytes(r.DataBlock, r.Granule) }

// Header is the presence ring's header for an observation: the data ring's
// header dataHdr with the presence keys set, NUL padded to HeaderSize.
func (r Ring) Header(dataHdr []byte) ([]byte, error) {
	hd, err := dada.ParseHeader(dataHdr)
	if err != nil {
		return nil, fmt.Errorf("presence header: %w", err)
	}
	for _, kv := range [][2]string{{KeyFormat, FormatName}, {KeyGranule, strconv.FormatUint(r.Granule, 10)},
		{KeyDataKey, r.DataKey.String()}, {KeyDataBlock, strconv.FormatUint(r.DataBlock, 10)}} {
		if err := hd.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("presence header: set %s: %w", kv[0], err)
		}
	}
	b, err := hd.Bytes(r.HeaderSize)
	if err != nil {
		return nil, fmt.Errorf("presence header: %w", err)
	}
	return b, nil
}

// IsPresenceHeader reports whether an observation's header is a presence
// ring's of a format this package reads.
func IsPresenceHeader(hdr []byte) bool {
	hd, err := dada.ParseHeader(hdr)
	if err != nil {
		return false
	}
	v, ok := hd.Get(KeyFormat)
	return ok && v == FormatName
}
