package kernel

import (
	"syscall"
	"unsafe"
)

// setParentDeathSignal makes Linux kill the kernel when the server dies,
// even by SIGKILL.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// memoryLimitSupported reports whether setMemoryLimit works here.
const memoryLimitSupported = true

// setMemoryLimit sets RLIMIT_AS (soft and hard) of process pid to limit
// bytes with prlimit64, which can change another process's limits.
func setMemoryLimit(pid int, limit int64) error {
	rl := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_AS, uintptr(unsafe.Pointer(&rl)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// waitExitNoReap blocks until process pid has exited, leaving it a zombie
// for Wait to reap (waitid with WNOWAIT, as os.Process does internally). It
// reports false if it cannot wait.
func waitExitNoReap(pid int) bool {
	const pPID = 1 // P_PID
	var siginfo [16]uint64
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}
