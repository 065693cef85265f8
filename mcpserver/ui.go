package mcpserver

import _ "embed"

// The notebook views, built from the sources under ui/ at the repository
// root (cd ui && npm ci && npm run build) and committed, so that building
// the binary needs Go alone. Each is one self-contained HTML document:
// scripts and styles inline, no external URL. TestUIBundleFresh fails when
// they differ from a fresh build of ui/.
var (
	// cellHTML is the MCP App that shows a run as a notebook cell
	// (ui/src/app.js): served as the ui://kernel-mcp/cell.html resource.
	//
	//go:embed ui/cell.html
	cellHTML string

	// webHTML is the live web view's page (ui/src/web.js), served at /ui/.
	//
	//go:embed ui/web.html
	webHTML string
)
