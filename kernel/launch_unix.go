//go:build unix

package kernel

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the kernel in its own process group, so an interrupt or a
// kill reaches the processes it started too, and a Ctrl-C in the server's
// terminal does not reach the kernel.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the kernel's whole process group.
func (p *process) signalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.pid, sig)
}

func (p *process) interrupt() error { return p.signalGroup(syscall.SIGINT) }
func (p *process) terminate() error { return p.signalGroup(syscall.SIGTERM) }
func (p *process) kill() error      { return p.signalGroup(syscall.SIGKILL) }

// canSignalInterrupt reports whether interrupt() works on this platform.
const canSignalInterrupt = true

// processExists reports whether a process with that pid exists (EPERM: it
// does, and belongs to someone else).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
