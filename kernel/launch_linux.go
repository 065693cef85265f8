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
