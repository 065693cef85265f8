//go:build unix

package kernel

import (
	"os"
	"strconv"
	"syscall"
)

// setProcAttr puts the kernel in its own process group, so an interrupt or a
// kill reaches the processes it started too, and a Ctrl-C in the server's
// terminal does not reach it. JPY_PARENT_PID makes ipykernel exit when it
// is re-parented (the server died) where there is no parent-death signal.
func (p *process) setProcAttr() error {
	p.cmd.Env = append(p.cmd.Env, "JPY_PARENT_PID="+strconv.Itoa(os.Getpid()))
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(p.cmd.SysProcAttr)
	return nil
}

// platformHandles is empty on Unix: the kernel inherits no handles.
type platformHandles struct{}

// startedHandles and releaseHandles have nothing to release on Unix.
func (p *process) startedHandles() error { return nil }
func (p *process) releaseHandles()       { p.handles = platformHandles{} }

// signalGroup sends sig to the kernel's whole process group, unless the
// leader has been reaped: its pid, the group's id, may then name another
// process group, and the signal would hit a stranger.
func (p *process) signalGroup(sig syscall.Signal) error {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return syscall.Kill(-p.pid, sig)
}

// killGroupBeforeReap waits for the leader to exit without reaping it, then
// sends SIGKILL to the group and stops further group signals. Until the
// leader is reaped its pid stays taken, so the signal can only reach what
// the kernel left in its own group (a subprocess, a multiprocessing worker).
// Where the exit cannot be seen without reaping, it returns at once and the
// group is signalled no more once Wait has reaped the leader.
func (p *process) killGroupBeforeReap() {
	if !waitExitNoReap(p.pid) {
		return
	}
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	syscall.Kill(-p.pid, syscall.SIGKILL)
	p.reaped = true
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
