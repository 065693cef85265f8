package mcpserver

import (
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// The text of tools on remote and attached kernels (engine/remote.go has
// how they start, engine/kernellist.go a gateway's kernelspecs).

// remoteStartedText is create_session's answer for a gateway or attached
// kernel, which has no local pid.
func remoteStartedText(id string, info engine.SessionInfo, ss *engine.Session) string {
	k := ss.RunningKernel()
	where := ""
	switch {
	case k == nil:
	case k.GatewayKernelID() != "":
		where = fmt.Sprintf("kernel %s on %s", k.GatewayKernelID(), k.GatewayURL())
	default:
		where = "connection file " + k.ConnectionFile()
	}
	verb := "started"
	if ss.Choice().Attached() {
		verb = "attached (the kernel is shared: delete_session only detaches, and resets need force)"
	}
	return fmt.Sprintf("Session %q %s: %s %s (kernelspec %s, %s).", id, verb, info.Language, info.Version, info.Kernel, where)
}
