package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The text of tools on remote and attached kernels (engine/remote.go has
// how they start).

// gatewayKernelSpecs lists a gateway's kernelspecs for list_kernels.
func (s *Server) gatewayKernelSpecs(ctx context.Context) ([]KernelSpecInfo, string, error) {
	specs, def, err := s.eng.Gateway().KernelSpecs(ctx)
	if err != nil {
		return nil, "", err
	}
	out := make([]KernelSpecInfo, 0, len(specs))
	for _, sp := range specs {
		out = append(out, KernelSpecInfo{Name: sp.Name, DisplayName: sp.DisplayName, Language: sp.Language, Argv: []string{}, Source: "gateway " + s.eng.GatewayShown()})
	}
	return out, def, nil
}

// listGatewayKernels is list_kernels in gateway mode: the server's
// kernelspecs; interpreters are the gateway's business.
func (s *Server) listGatewayKernels(ctx context.Context, out ListKernelsOutput) (*mcp.CallToolResult, ListKernelsOutput, error) {
	specs, def, err := s.gatewayKernelSpecs(ctx)
	if err != nil {
		return errResult[ListKernelsOutput]("listing the gateway's kernelspecs: %v", err)
	}
	out.Kernels = specs
	var text strings.Builder
	fmt.Fprintf(&text, "Kernelspecs on the gateway %s (default %s):\n", s.eng.GatewayShown(), def)
	for _, sp := range specs {
		fmt.Fprintf(&text, "  %s (%s, %s)\n", sp.Name, sp.DisplayName, sp.Language)
	}
	text.WriteString("Interpreters: chosen by the gateway's kernelspecs (create_session {kernel}).")
	return textResult(text.String()), out, nil
}

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
