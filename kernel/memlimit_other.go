//go:build !linux

package kernel

import "errors"

// memoryLimitSupported reports whether setMemoryLimit works here: there is
// no way to cap another process's address space on this platform.
const memoryLimitSupported = false

func setMemoryLimit(int, int64) error {
	return errors.New("kernel: a memory limit is only supported on Linux")
}
