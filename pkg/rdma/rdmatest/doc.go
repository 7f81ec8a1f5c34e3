// Package rdmatest builds sysfs and /dev trees for tests and benchmarks of RDMA
// discovery: copies of the committed testdata trees (which tests then modify, e.g. to
// take a port down) and synthetic trees with any number of devices.
package rdmatest
