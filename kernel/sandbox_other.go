//go:build !linux

package kernel

import (
	"fmt"
	"os"
	"runtime"
)

// CheckSandbox fails here: bubblewrap, and the namespaces it uses, exist
// only on Linux.
func CheckSandbox(SandboxOptions) error {
	return fmt.Errorf("%w; this is %s", ErrSandboxUnsupported, runtime.GOOS)
}

func checkSandbox(o SandboxOptions) (sandboxMode, error) { return sandboxMode{}, CheckSandbox(o) }

func openSandboxDir(string) (*os.File, error) { return nil, ErrSandboxUnsupported }

func sandboxRuntimeBase() (string, error) { return "", ErrSandboxUnsupported }
