// Command ringcap is ringcap's data-plane CLI: PSRDADA rings (ringcap ring create|destroy|
// info|monitor|write|read|header, dada_db compatible), the RDMA receiver (ringcap recv) and
// the test sender (ringcap send). Each command file registers its subcommands with
// register from init.
package main
