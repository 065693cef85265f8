package kernel

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcAttr starts the kernel in its own process group, so a Ctrl-C in the
// server's console does not reach it. ipykernel exits when the server is gone
// because JPY_PARENT_PID is set.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Windows has no SIGINT for another process; interrupts go over the control
// channel (interrupt_request), which ipykernel answers the same way.
const canSignalInterrupt = false

func (p *process) interrupt() error { return errors.New("kernel: no interrupt signal on windows") }
func (p *process) terminate() error { return p.cmd.Process.Kill() }
func (p *process) kill() error      { return p.cmd.Process.Kill() }

// processExists reports whether a process with that pid exists.
func processExists(pid int) bool {
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == syscall.ERROR_ACCESS_DENIED
	}
	syscall.CloseHandle(h)
	return true
}

// killGroupBeforeReap does nothing on Windows: there are no group signals,
// and Process.Kill goes through a handle, which cannot name another process.
func (p *process) killGroupBeforeReap() {}
