package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The text of tools on remote and attached kernels (engine/remote.go has
// how they start).

// remoteStatus fills session_status's remote fields and returns the lines
// its text adds.
func remoteStatus(ctx context.Context, k *kernel.Kernel, info *engine.SessionInfo) string {
	if k == nil {
		return ""
	}
	var b strings.Builder
	if id := k.GatewayKernelID(); id != "" {
		gi := &engine.GatewayInfo{URL: k.GatewayURL(), KernelID: id, Attached: k.Attached()}
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := k.GatewayStatus(gctx)
		cancel()
		if err != nil {
			gi.Error = err.Error()
		} else {
			gi.ExecutionState, gi.LastActivity, gi.Connections = m.ExecutionState, m.LastActivity, m.Connections
		}
		info.Gateway = gi
		fmt.Fprintf(&b, "Gateway: %s, kernel %s", gi.URL, gi.KernelID)
		if gi.Attached {
			b.WriteString(" (attached: shared, only detached on delete)")
		}
		if err != nil {
			fmt.Fprintf(&b, "; the gateway did not answer: %v\n", err)
		} else {
			fmt.Fprintf(&b, "; the gateway reports it %s, %d connection(s), last active %s\n", m.ExecutionState, m.Connections, m.LastActivity)
		}
		return b.String()
	}
	info.ConnectionFile = k.ConnectionFile()
	info.Attached = k.Attached()
	fmt.Fprintf(&b, "Connection file: %s (jupyter console --existing %s)\n", info.ConnectionFile, info.ConnectionFile)
	if info.Attached {
		b.WriteString("Attached: the kernel is shared and only detached on delete.\n")
	}
	return b.String()
}

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
