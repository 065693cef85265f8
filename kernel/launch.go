package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one kernel process we started: its own process group, stdin
// from the null device, stdout and stderr kept in a bounded ring for error
// messages.
type process struct {
	cmd    *exec.Cmd
	pid    int
	output *tailBuffer
	exited chan struct{} // closed once Wait returned
	state  *os.ProcessState
	err    error // Wait's error

	// sigMu orders signals to the process group against the reaping of its
	// leader. The group's id is the leader's pid, which the system may hand
	// to a new process once Wait has reaped the leader; so no group signal
	// is sent once reaped is set.
	sigMu  sync.Mutex
	reaped bool
	// handles are what the kernel inherits to see the server die and to be
	// interrupted on Windows (launch_windows.go); empty elsewhere.
	handles platformHandles
	// sandboxed: the process is bwrap, which exits with the kernel's exit
	// status, or 128+n when the kernel was killed by signal n.
	sandboxed bool
}

// startProcess starts argv. The start and the wait run on one goroutine
// locked to its OS thread: on Linux the kernel's parent-death signal belongs
// to the thread that forked it, so that thread must live exactly as long as
// the kernel does. extra are inherited as fds 3, 4, ...
func startProcess(argv []string, dir string, env []string, extra []*os.File) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("kernel: empty kernel command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.ExtraFiles = extra
	p := &process{cmd: cmd, output: newTailBuffer(16 << 10), exited: make(chan struct{})}
	cmd.Stdout = p.output
	cmd.Stderr = p.output
	// A child the kernel started may keep the output pipe open after the
	// kernel exits; do not let it hold up Wait.
	cmd.WaitDelay = time.Second
	// The platform's way for the kernel to see its parent die and to be
	// interrupted: JPY_PARENT_PID and signals on Unix, inherited handles
	// on Windows.
	if err := p.setProcAttr(); err != nil {
		return nil, fmt.Errorf("kernel: start %s: %w", argv[0], err)
	}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is never unlocked: it ends with this goroutine, after
		// the kernel has exited.
		if err := cmd.Start(); err != nil {
			p.releaseHandles()
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		if err := p.startedHandles(); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			p.releaseHandles()
			started <- err
			return
		}
		started <- nil
		// Where the platform lets us see the exit before the reap, what
		// the kernel left in its process group is killed then, while the
		// group's id still cannot belong to anyone else.
		p.killGroupBeforeReap()
		p.err = cmd.Wait()
		p.sigMu.Lock()
		p.reaped = true
		p.sigMu.Unlock()
		p.state = cmd.ProcessState
		p.releaseHandles()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		// A missing working directory fails the start with an error that
		// names only the program: say which is missing.
		if dir != "" {
			if _, serr := os.Stat(dir); serr != nil {
				return nil, fmt.Errorf("kernel: start %s: working directory: %w", argv[0], serr)
			}
		}
		return nil, fmt.Errorf("kernel: start %s: %w", argv[0], err)
	}
	return p, nil
}

// diedError describes how the process ended. Call it after exited is closed.
func (p *process) diedError() *DiedError {
	d := &DiedError{ExitCode: -1, Stderr: p.output.String()}
	if p.state != nil {
		d.ExitCode = p.state.ExitCode()
		if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			d.SignalNo = int(ws.Signal())
			d.Signal = ws.Signal().String()
		}
		if p.sandboxed && d.SignalNo == 0 && d.ExitCode > 128 && d.ExitCode < 128+65 {
			d.SignalNo = d.ExitCode - 128
			d.Signal = syscall.Signal(d.SignalNo).String()
			d.ExitCode = -1
		}
	}
	return d
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// tailBuffer is an io.Writer that keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		p = p[len(p)-t.max:]
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLines returns at most n trailing non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
