//go:build !unix && !windows

package main

import "os"

// shutdownSignals end the server gracefully.
var shutdownSignals = []os.Signal{os.Interrupt}
