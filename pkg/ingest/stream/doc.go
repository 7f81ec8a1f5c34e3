// Package stream runs one packet stream into a PSRDADA ring: each packet is
// decoded (pkg/ingest/spead or pkg/ingest/vdif, as the configuration says),
// placed by the protocol's rule at a stream byte offset, and written by a
// pkg/ingest/assemble assembler into the ring's blocks. It knows no socket:
// a Source (the UDP layer, or a test's packets in memory) hands it packets,
// one at a time from one goroutine, and Handle allocates nothing per packet.
//
// # Loss, counted in one place
//
// Every packet handed to the pipeline is counted once, under one outcome
// (Counters):
//
//	packets = received + late + out-of-window + duplicate + malformed + invalid + out-of-range + before-start + control
//
// The assembler counts the first five (packets its decoder or placer found
// malformed are reported to it, so that one count holds every malformed
// packet); the pipeline counts VDIF frames flagged invalid, packets the rule
// does not place (a channel or thread outside it), packets before the
// observation's start (the given start, or the first packet placed: a stream
// reordered before its first packet loses what came before it) and SPEAD
// control packets (descriptor or stream-control items, no timestamp item),
// which carry no data. A failure that ends the pipeline (the ring, or a
// header the first packet placed cannot give) leaves that packet without an
// outcome.
//
// # The observation header
//
// The header is built when the first packet is placed, from the user's
// template (pkg/capture/headerrules builds it) with the stream's own keys set
// over it: HDR_SIZE, OBS_OFFSET, UTC_START (RINGCAP_UTC_START_SOURCE
// "stream"), BYTES_PER_SECOND and RINGCAP_PROTOCOL, plus
//
//   - SPEAD: UTC_START is the whole second of the first timestamp t0's time,
//     SyncTime + t0/SampleRate, and OBS_OFFSET the stream's bytes from that
//     second to t0; the sync time and the sample rate are the user's, or each
//     an immediate item of the first packet placed. RINGCAP_SPEAD_TIMESTAMP,
//     RINGCAP_SPEAD_SYNC_TIME and RINGCAP_SPEAD_SAMPLE_RATE keep the exact
//     values.
//   - VDIF: UTC_START is the first frame's second (reference epoch plus
//     seconds), OBS_OFFSET 0; NBIT, NCHAN (of one frame) and NDIM (2 when
//     complex) from the frame, RINGCAP_VDIF_STATION, RINGCAP_VDIF_THREADS and
//     RINGCAP_VDIF_FRAMES_PER_SECOND. NPOL is not in a VDIF frame: the
//     template gives it.
//
// The stream's keys replace the template's (NBIT, BYTES_PER_SECOND, ...).
// Config.CheckHeader checks before any packet that the header fits the header
// block with every stream value at its widest.
//
// Stream byte 0 is the start (heap index 0, frame 0 of the first second), so
// a lost first packet leaves zeros at the start of the first block, recorded
// as missing like any other gap.
package stream
