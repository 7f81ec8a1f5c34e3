// Package devices says what this host offers ringcap: the verbs devices found in sysfs
// (device, port, state, link layer and the GID a receiver would choose) and the libfabric
// providers and domains fi_getinfo offers for reliable-datagram endpoints (capabilities,
// remote CQ data, MR modes, message size), each with the ringcap modes it can run. It is
// `ringcap devices`; the command only parses flags and prints the Report. HostRoots is
// where every ringcap command discovers the host's RDMA devices.
//
// What can run what (pure functions of the discovered facts, see VerbsModes and
// OFIModes): over verbs, both modes need RC queue pairs, which every verbs device but an
// AWS EFA has; over libfabric, write mode needs FI_RMA and remote CQ data (the last
// write of a block carries its sequence number), send mode needs FI_MSG and remote CQ
// data.
package devices
