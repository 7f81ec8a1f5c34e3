package testenv

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child get SIGKILL when the test process dies, so a killed
// test (timeout, ^C) leaves no controller manager behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
