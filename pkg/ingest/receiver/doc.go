// Package receiver is `ringcap recv --protocol spead|vdif`: a packet-stream
// receiver that fills a PSRDADA ring from UDP sockets. It opens the sockets
// (pkg/ingest/udp), runs one stream pipeline (pkg/ingest/stream: decode,
// place, assemble) over them and reports in the receiver's status tracker:
// its state, the "packets" section of /status and the ringcap_packet*
// metrics, both read from the pipeline's and the sockets' counters when
// asked, never per packet. pkg/capture.Run makes the ring, serves /status and
// /metrics and ends the run as for an RDMA capture; Serve is its ServeRing.
//
// A run is one observation: it begins at the first packet (the pipeline is
// made then, so a run stopped before any packet leaves no observation) and
// ends at a stop condition (StopBytes, StopDuration) or a stop (ctx, e.g.
// SIGTERM), when the open blocks are handed over, the last one partial, and
// the data end. Packets from the sockets of every port are handed to the one
// pipeline in turn.
//
// With Presence.Key, ServeRing also writes the presence ring beside the
// data ring (pkg/ingest/presence): the record of each data block, from the
// assembler's OnBlock, into the next presence block before the data block is
// marked filled, under the data ring's observation header with the presence
// keys. Its readers hold the receiver back as the data ring's do. It is made
// before Serve and ended, drained and destroyed after it.
package receiver
