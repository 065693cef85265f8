//go:build unix && !linux

package kernel

import "syscall"

// setParentDeathSignal does nothing here: there is no parent-death signal.
// ipykernel watches JPY_PARENT_PID instead and exits when the server is gone.
func setParentDeathSignal(*syscall.SysProcAttr) {}
