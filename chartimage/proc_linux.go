package chartimage

import (
	"os/exec"
	"syscall"
)

// prepareCmd makes the browser die with the server, even when the server
// is killed, and puts it in a process group of its own.
func prepareCmd(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
}
