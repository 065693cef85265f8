// Package gatewaytest starts real Jupyter servers for tests: Jupyter Kernel
// Gateway (with jupyter_server) and Jupyter Enterprise Gateway 3.x, each
// from a virtualenv of its own that .ci/run creates, on 127.0.0.1 with a
// free port and a random token. It is Unix-only, like the tests that use it.
//
// The venvs are found through KERNEL_MCP_TEST_KG_VENV and
// KERNEL_MCP_TEST_EG_VENV, by default $HOME/.cache/kernel-mcp/venv-kg and
// venv-eg. A missing venv skips the test, or fails it when CI=true.
package gatewaytest
