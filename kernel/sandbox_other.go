//go:build !linux

package kernel

import (
	"fmt"
	"runtime"
)

// CheckSandbox fails here: bubblewrap, and the namespaces it uses, exist
// only on Linux.
func CheckSandbox(SandboxOptions) error {
	return fmt.Errorf("%w; this is %s", ErrSandboxUnsupported, runtime.GOOS)
}
