//go:build !kernelmcp_external_assets

package assets

// External reports whether this build reads Files from Dir. Here it does
// not: chartlib and mcpserver embed them.
const External = false
