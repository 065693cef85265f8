package mcpserver

// cellHTML stands in for the built cell view until mcpserver/ui.go embeds
// ui/cell.html; this file goes when that lands.
var cellHTML = "<!doctype html><title>kernel-mcp</title>"
