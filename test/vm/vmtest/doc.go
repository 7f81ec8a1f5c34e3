// Package vmtest is the Go side of the Soft-RoCE VM harness (hack/vm, test/vm, make test-vm).
//
// Tests that need real RDMA carry the build tag vm; make test-vm compiles them on the host
// with `go test -c -tags vm`, boots one VM with two Soft-RoCE devices and runs them there as
// root, with the package directory (read-only) as working directory:
//
//	rxe0 on veth0, 198.18.0.1      rxe1 on veth1, 198.18.0.2      (policy routing between them)
//
// Require fails a test that is run outside the VM (vm tests never skip silently), and
// RunUnprivileged runs part of a test as an unprivileged user with a given RLIMIT_MEMLOCK,
// the way a receiver runs in a pod without CAP_IPC_LOCK.
package vmtest
