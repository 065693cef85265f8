package kernel

import "syscall"

// setParentDeathSignal makes Linux kill the kernel when the server dies,
// even by SIGKILL.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
