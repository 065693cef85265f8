package kernel

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// bwrapPackage names what to install, for errors about a missing bwrap.
const bwrapPackage = "install the Debian/Ubuntu package bubblewrap (apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

// sandboxChecked remembers the bwrap binaries (and network settings) that
// have created a sandbox here, so only the first Start pays for the check.
var sandboxChecked sync.Map

// CheckSandbox reports, as one line, why a sandbox with these options
// cannot be created here: bwrap is missing, or cannot create the
// namespaces (unprivileged user namespaces turned off, or a container that
// forbids them). It runs bwrap once; a success is remembered.
func CheckSandbox(o SandboxOptions) error {
	key := fmt.Sprintf("%s|%v", o.bwrap(), o.Network)
	if _, ok := sandboxChecked.Load(key); ok {
		return nil
	}
	path, err := exec.LookPath(o.bwrap())
	if err != nil {
		return fmt.Errorf("kernel: the sandbox needs bubblewrap, and %q was not found: %s", o.bwrap(), bwrapPackage)
	}
	argv := bwrapArgv(sandboxPlan{opts: o, dir: "/", runtimeDir: "/"}, []string{"true"})
	out, err := exec.Command(path, argv[1:]...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		msg = strings.ReplaceAll(msg, "\n", "; ")
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fmt.Errorf("kernel: running %s: %v", path, err)
		}
		return fmt.Errorf("kernel: bubblewrap (%s) cannot create the sandbox here: %s; it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container that allows them) or a setuid bwrap", path, msg)
	}
	sandboxChecked.Store(key, struct{}{})
	return nil
}
