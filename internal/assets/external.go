//go:build kernelmcp_external_assets

package assets

// External reports whether this build reads Files from Dir. Here it does:
// chartlib and mcpserver embed nothing and read them when asked.
const External = true
