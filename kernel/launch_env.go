package kernel

import (
	"strconv"
	"strings"
)

// handleEnvNames are the variables through which ipykernel learns the
// handles; IPY_INTERRUPT_EVENT is the older name, still read.
var handleEnvNames = []string{"JPY_PARENT_PID", "JPY_INTERRUPT_EVENT", "IPY_INTERRUPT_EVENT"}

// windowsLaunch builds, from the server's environment, a Windows kernel's
// environment and the list of handles it must inherit. It is pure so that
// it is tested everywhere; launch_windows.go makes the handles. Any value
// of these variables the server itself inherited is dropped, case-blind as
// Windows is: a stale handle number would point at nothing, or worse.
//
// The handles are those jupyter_client gives a kernel on Windows: parent,
// a handle to the server's process, which ipykernel waits on to exit when
// the server is gone (it must be a handle: given a pid, ipykernel's wait
// fails and it outlives the server), and interrupt, an event that
// interrupts the kernel when set (ipykernel ignores interrupt_request on
// Windows). Zero means none.
func windowsLaunch(env []string, parent, interrupt uintptr) (kernelEnv []string, handles []uintptr) {
	kernelEnv = make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range handleEnvNames {
			if strings.EqualFold(name, n) {
				drop = true
			}
		}
		if !drop {
			kernelEnv = append(kernelEnv, kv)
		}
	}
	if parent != 0 {
		kernelEnv = append(kernelEnv, "JPY_PARENT_PID="+strconv.FormatUint(uint64(parent), 10))
		handles = append(handles, parent)
	}
	if interrupt != 0 {
		ev := strconv.FormatUint(uint64(interrupt), 10)
		kernelEnv = append(kernelEnv, "JPY_INTERRUPT_EVENT="+ev, "IPY_INTERRUPT_EVENT="+ev)
		handles = append(handles, interrupt)
	}
	return kernelEnv, handles
}
