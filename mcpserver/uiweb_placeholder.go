package mcpserver

// webHTML stands in for the built web view page until ui.go embeds it.
var webHTML = "<!doctype html><title>kernel-mcp</title>"
