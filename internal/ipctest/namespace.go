//go:build linux

package ipctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// NamespaceEnv is the environment variable through which Isolate finds out
// whether this process already runs in its test binary's own IPC namespace:
// "fresh" in the process Isolate starts, then that namespace's id (as in
// /proc/self/ns/ipc), which the processes a test starts inherit. Set it to
// "shared" to run the tests in the caller's IPC namespace (to watch their
// rings with ipcs, say), accepting that the leak check can then report,
// and remove, other processes' objects.
const NamespaceEnv = "RINGCAP_IPCTEST_NS"

const (
	nsFresh  = "fresh"
	nsShared = "shared"
)

// isolated is whether this process runs in a SysV IPC namespace of its test
// binary's own.
var isolated bool

// Isolate runs the test binary in a SysV IPC namespace of its own, so that its
// leak check (CheckLeaks, Leaked) sees only the objects it and the processes
// it starts created: rings of other processes on the machine — another
// `go test` of the same package, say — share no key with it. Call it first in
// TestMain. In the process `go test` started it re-executes the binary, with
// the same arguments, in a new IPC namespace (CLONE_NEWIPC, or
// CLONE_NEWUSER|CLONE_NEWIPC with the current uid and gid mapped to themselves
// when that is not permitted), waits for it, and exits with its status; it
// returns in that new process and in every process started from it (they
// inherit NamespaceEnv, and so share the namespace). The kernel removes what
// is left in the namespace when its last process exits. When no namespace can
// be created, or NamespaceEnv is "shared", it says so on stderr and returns:
// the binary then runs in the caller's namespace, as before.
func Isolate() {
	self, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		fmt.Fprintf(os.Stderr, "ipctest: read this process's IPC namespace: %v; %s\n", err, sharedNote)
		return
	}
	switch os.Getenv(NamespaceEnv) {
	case self:
		isolated = true
		return
	case nsFresh:
		isolated = true
		if err := os.Setenv(NamespaceEnv, self); err != nil {
			panic(err) // cannot happen: the name is valid
		}
		return
	case nsShared:
		fmt.Fprintf(os.Stderr, "ipctest: %s=%s: %s\n", NamespaceEnv, nsShared, sharedNote)
		return
	}
	code, err := runIsolated()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ipctest: %v; %s\n", err, sharedNote)
		return
	}
	os.Exit(code)
}

const sharedNote = "running in the caller's IPC namespace: the leak check can report (and remove) other processes' SysV objects at this binary's test keys"

// runIsolated starts this binary again in a new IPC namespace, forwards the
// termination signals it gets to it, and returns its exit status.
func runIsolated() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the test binary to re-execute in a new IPC namespace: %w", err)
	}
	var errs []error
	for _, attr := range namespaceAttrs() {
		cmd := &exec.Cmd{
			Path: exe, Args: os.Args, Env: append(os.Environ(), NamespaceEnv+"="+nsFresh),
			Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: attr,
		}
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		return wait(cmd), nil
	}
	return 0, fmt.Errorf("start the test binary in a new IPC namespace: %w", errors.Join(errs...))
}

// namespaceAttrs returns the ways to start a process in a new IPC namespace,
// in the order to try them: directly (needs CAP_SYS_ADMIN), then in a new user
// namespace as well, mapping only the current uid and gid (to themselves), so
// files and permissions look the same.
func namespaceAttrs() []*syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return []*syscall.SysProcAttr{
		{Cloneflags: syscall.CLONE_NEWIPC, Pdeathsig: syscall.SIGKILL},
		{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWIPC,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		},
	}
}

// wait waits for cmd, passing SIGINT, SIGTERM, SIGQUIT (go test's timeout) and
// SIGHUP on to it, and returns its exit status.
func wait(cmd *exec.Cmd) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	close(done)
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	fmt.Fprintf(os.Stderr, "ipctest: the test binary in its own IPC namespace: %v\n", err)
	return 1
}
