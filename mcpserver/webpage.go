package mcpserver

// WebHTML is the web view's page (ui/web.html), one self-contained file;
// cmd/kernel-mcp serves it with the webview package.
func WebHTML() string { return webHTML }
