//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package kernel

import "syscall"

// waitExitNoReap blocks until process pid has exited, leaving it a zombie
// for Wait to reap: a kqueue EVFILT_PROC NOTE_EXIT event fires at the exit,
// not at the reap. It reports false if it cannot wait.
func waitExitNoReap(pid int) bool {
	kq, err := syscall.Kqueue()
	if err != nil {
		return false
	}
	defer syscall.Close(kq)
	var ev [1]syscall.Kevent_t
	syscall.SetKevent(&ev[0], pid, syscall.EVFILT_PROC, syscall.EV_ADD|syscall.EV_ONESHOT)
	ev[0].Fflags = syscall.NOTE_EXIT
	for {
		n, err := syscall.Kevent(kq, ev[:], ev[:], nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.ESRCH:
			// Already exited: only Wait reaps our children, and it has
			// not run yet, so the pid is still the kernel's.
			return true
		case err != nil:
			return false
		}
		if n != 1 {
			return false
		}
		if ev[0].Flags&syscall.EV_ERROR != 0 {
			// A registration error comes back as an event; ESRCH means
			// the process has already exited (and is unreaped, as above).
			return syscall.Errno(ev[0].Data) == syscall.ESRCH
		}
		return ev[0].Fflags&syscall.NOTE_EXIT != 0
	}
}
