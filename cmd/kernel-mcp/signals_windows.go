//go:build windows

package main

import (
	"os"
	"syscall"
)

// shutdownSignals end the server gracefully: its kernels are shut down
// before it exits. On Windows, os.Interrupt is Ctrl+C / Ctrl+Break and
// syscall.SIGTERM is the console's close, logoff and shutdown events.
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
