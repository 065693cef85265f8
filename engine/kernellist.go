package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
)

// KernelList is what list_kernels shows: the kernelspecs installed (or the
// gateway's) and the Python interpreters found.
type KernelList struct {
	Kernels      []KernelSpecInfo  `json:"kernels"`
	Interpreters []InterpreterInfo `json:"interpreters"`
}

// KernelSpecInfo describes one installed kernelspec.
type KernelSpecInfo struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"display_name"`
	Language    string   `json:"language"`
	Argv        []string `json:"argv"`
	Source      string   `json:"source"`
}

// InterpreterInfo describes one Python interpreter found.
type InterpreterInfo struct {
	Path      string `json:"path"`
	Version   string `json:"version"`
	IPyKernel string `json:"ipykernel"`
	Source    string `json:"source"`
}

// ListKernels lists the kernels sessions can use, and says the same in
// words. With a gateway these are the gateway's kernelspecs; the
// interpreters are then the gateway's business.
func (s *Engine) ListKernels(ctx context.Context) (KernelList, string, error) {
	out := KernelList{Kernels: []KernelSpecInfo{}, Interpreters: []InterpreterInfo{}}
	if s.cfg.GatewayURL != "" {
		return s.listGatewayKernels(ctx, out)
	}
	specs, err := kernelspec.Find(ctx, kernelspec.FindOptions{Python: s.cfg.Python})
	if err != nil {
		return KernelList{}, "", fmt.Errorf("finding kernelspecs: %v", err)
	}
	var text strings.Builder
	text.WriteString("Kernelspecs:\n")
	for _, sp := range specs {
		out.Kernels = append(out.Kernels, KernelSpecInfo{Name: sp.Name, DisplayName: sp.DisplayName, Language: sp.Language, Argv: sp.Argv, Source: sp.Source})
		fmt.Fprintf(&text, "  %s (%s, %s) from %s\n", sp.Name, sp.DisplayName, sp.Language, sp.Source)
	}
	if len(specs) == 0 {
		text.WriteString("  (none installed)\n")
	}
	text.WriteString("Python interpreters:\n")
	ropts := kernelspec.ResolveOptions{Python: s.cfg.Python}
	if s.cfg.Sandbox != nil {
		// Listing an interpreter runs it, outside the sandbox.
		ropts.Allow = s.PythonAllowed
	}
	for _, in := range kernelspec.Interpreters(ctx, ropts) {
		out.Interpreters = append(out.Interpreters, InterpreterInfo{Path: in.Path, Version: in.Version, IPyKernel: in.IPyKernel, Source: in.Source})
		ipk := "ipykernel " + in.IPyKernel
		if in.IPyKernel == "" {
			ipk = "no ipykernel (install_package cannot help here: run " + in.Path + " -m pip install ipykernel)"
		}
		fmt.Fprintf(&text, "  %s (Python %s, %s) from %s\n", in.Path, in.Version, ipk, in.Source)
	}
	return out, strings.TrimRight(text.String(), "\n"), nil
}

// listGatewayKernels is ListKernels in gateway mode: the server's
// kernelspecs.
func (s *Engine) listGatewayKernels(ctx context.Context, out KernelList) (KernelList, string, error) {
	specs, def, err := s.GatewayKernelSpecs(ctx)
	if err != nil {
		return KernelList{}, "", fmt.Errorf("listing the gateway's kernelspecs: %v", err)
	}
	out.Kernels = make([]KernelSpecInfo, 0, len(specs))
	for _, sp := range specs {
		out.Kernels = append(out.Kernels, KernelSpecInfo{Name: sp.Name, DisplayName: sp.DisplayName, Language: sp.Language, Argv: []string{}, Source: "gateway " + s.GatewayShown()})
	}
	var text strings.Builder
	fmt.Fprintf(&text, "Kernelspecs on the gateway %s (default %s):\n", s.GatewayShown(), def)
	for _, sp := range specs {
		fmt.Fprintf(&text, "  %s (%s, %s)\n", sp.Name, sp.DisplayName, sp.Language)
	}
	text.WriteString("Interpreters: chosen by the gateway's kernelspecs (create_session {kernel}).")
	return out, text.String(), nil
}
