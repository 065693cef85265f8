//go:build unix

package kernel

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process (the client, not the kernel)
// has used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
