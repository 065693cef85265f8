//go:build unix

package main

import (
	"os"
	"syscall"
)

// shutdownSignals end the server gracefully: its kernels are shut down
// before it exits. SIGHUP is included because a closed terminal should not
// leave kernels behind.
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
