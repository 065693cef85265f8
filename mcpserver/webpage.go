package mcpserver

// WebHTML is the web view's page (ui/web.html, from ui/src/web.js), one
// self-contained file; cmd/kernel-mcp serves it with the webview package.
// It fails only in a kernelmcp_external_assets build whose assets
// directory lacks the page.
func WebHTML() (string, error) { return uiPage("web.html") }
