package kernel

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platformHandles are the handles a kernel inherits on Windows, and the
// Job Object that holds it and everything it starts, while we hold them;
// zero once closed.
type platformHandles struct {
	mu        sync.Mutex
	parent    windows.Handle
	interrupt windows.Handle
	// job kills every process in it when its last handle, ours, closes
	// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): at the reap, or when the
	// server dies. Windows has no process groups; without it a process the
	// kernel started would outlive Close and Restart.
	job windows.Handle
}

// newKillOnCloseJob creates a Job Object that kills its processes when
// its last handle is closed. The handle is not inheritable.
func newKillOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
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
	job, err := newKillOnCloseJob()
	if err != nil {
		windows.CloseHandle(ev)
		windows.CloseHandle(parent)
		return fmt.Errorf("job object: %w", err)
	}
	p.handles.parent, p.handles.interrupt, p.handles.job = parent, ev, job
	env, hs := windowsLaunch(p.cmd.Env, uintptr(parent), uintptr(ev))
	p.cmd.Env = env
	attr := &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	for _, h := range hs {
		attr.AdditionalInheritedHandles = append(attr.AdditionalInheritedHandles, syscall.Handle(h))
	}
	p.cmd.SysProcAttr = attr
	return nil
}

// startedHandles puts the kernel, just started, into its Job Object, so
// that the processes it starts are in it too, and closes our copy of the
// parent handle: the kernel has its own now. The event stays open, to
// interrupt with, and the job, to kill with, until the kernel exits.
func (p *process) startedHandles() error {
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	p.closeParentLocked()
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.pid))
	if err != nil {
		return fmt.Errorf("job object: opening the kernel process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(p.handles.job, h); err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	return nil
}

func (p *process) closeParentLocked() {
	if p.handles.parent != 0 {
		windows.CloseHandle(p.handles.parent)
		p.handles.parent = 0
	}
}

// releaseHandles closes every handle still open; interrupt fails after.
// Closing the job kills whatever the kernel left running in it.
func (p *process) releaseHandles() {
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	p.closeParentLocked()
	if p.handles.interrupt != 0 {
		windows.CloseHandle(p.handles.interrupt)
		p.handles.interrupt = 0
	}
	if p.handles.job != 0 {
		windows.CloseHandle(p.handles.job)
		p.handles.job = 0
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

// terminate and kill end the kernel and every process it started, through
// its Job Object (Windows has no gentler signal). Once the kernel has been
// reaped the job is gone, and Process.Kill reports os.ErrProcessDone.
func (p *process) terminate() error { return p.kill() }
func (p *process) kill() error {
	p.handles.mu.Lock()
	defer p.handles.mu.Unlock()
	if p.handles.job == 0 {
		return p.cmd.Process.Kill()
	}
	return windows.TerminateJobObject(p.handles.job, 1)
}

// processExists reports whether a process with that pid exists.
func processExists(pid int) bool {
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == syscall.ERROR_ACCESS_DENIED
	}
	syscall.CloseHandle(h)
	return true
}

// killGroupBeforeReap does nothing on Windows: closing the kernel's Job
// Object at the reap (releaseHandles) kills what it left, and a job handle
// cannot name another process.
func (p *process) killGroupBeforeReap() {}
