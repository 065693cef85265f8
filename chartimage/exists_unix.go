//go:build unix

package chartimage

import (
	"errors"
	"syscall"
)

// processExists: a process with that pid runs (perhaps another user's).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
