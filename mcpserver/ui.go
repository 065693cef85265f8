package mcpserver

// The notebook views, built from the sources under ui/ at the repository
// root (cd ui && npm ci && npm run build) and committed, so that building
// the binary needs Go alone. Each is one self-contained HTML document:
// scripts and styles inline, no external URL. TestUIBundleFresh fails when
// they differ from a fresh build of ui/. A default build embeds them
// (ui_embedded.go); one with the kernelmcp_external_assets tag reads them
// from internal/assets' directory when asked (ui_external.go).

// cellHTML is the MCP App that shows a run as a notebook cell
// (ui/src/app.js): served as the ui://kernel-mcp/cell.html resource.
func cellHTML() (string, error) { return uiPage("cell.html") }
