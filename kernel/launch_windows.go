package kernel

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platformHandles are the handles a kernel inherits on Windows, while we
// hold them; zero once closed.
type platformHandles struct {
	mu        sync.Mutex
	parent    windows.Handle
	interrupt windows.Handle
}

// setProcAttr starts the kernel in its own process group, so a Ctrl-C in
// the server's console does not reach it, and gives it, as jupyter_client
// does, an inheritable handle to the server's process in JPY_PARENT_PID
// (ipykernel exits when that handle is signalled, i.e. the server is gone)
// and an inheritable event in JPY_INTERRUPT_EVENT and IPY_INTERRUPT_EVENT
// (setting it interrupts the kernel: ipykernel ignores interrupt_request on
// Windows).
func (p *process) setProcAttr() error {
	inherit := &windows.SecurityAttributes{InheritHandle: 1}
	inherit.Length = uint32(unsafe.Sizeof(*inherit))
	ev, err := windows.CreateEvent(inherit, 0, 0, nil)
	if err != nil {
		return fmt.Errorf("interrupt event: %w", err)
	}
	self := windows.CurrentProcess()
	var parent windows.Handle
	if err := windows.DuplicateHandle(self, self, self, &parent, 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
		windows.CloseHandle(ev)
		return fmt.Errorf("handle to the server process: %w", err)
	}
	p.handles.parent, p.handles.interrupt = parent, ev
	env, hs := windowsLaunch(p.cmd.Env, uintptr(parent), uintptr(ev))
	p.cmd.Env = env
	attr := &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	for _, h := range hs {
		attr.AdditionalInheritedHandles = append(attr.AdditionalInheritedHandles, syscall.Handle(h))
	}
	p.cmd.SysProcAttr = attr
	return nil
}

// startedHandles closes our copy of the parent handle: the kernel has its
// own now. The event stays open, to interrupt with, until the kernel exits.
func (p *process) startedHandles() {
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	if p.handles.parent != 0 {
		windows.CloseHandle(p.handles.parent)
		p.handles.parent = 0
	}
}

// releaseHandles closes every handle still open; interrupt fails after.
func (p *process) releaseHandles() {
	p.startedHandles()
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	if p.handles.interrupt != 0 {
		windows.CloseHandle(p.handles.interrupt)
		p.handles.interrupt = 0
	}
}

// canSignalInterrupt: the interrupt event does on Windows what SIGINT does
// on Unix.
const canSignalInterrupt = true

// interrupt sets the kernel's interrupt event.
func (p *process) interrupt() error {
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	if p.handles.interrupt == 0 {
		return fmt.Errorf("kernel: the kernel has exited")
	}
	return windows.SetEvent(p.handles.interrupt)
}

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
