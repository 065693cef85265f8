package engine

import (
	"maps"
	"testing"
)

// TestGatewayKernelEnv: KERNEL_* settings reach the gateway, the server's
// own KERNEL_MCP_* settings (its gateway token) never do.
func TestGatewayKernelEnv(t *testing.T) {
	got := gatewayKernelEnv([]string{
		"KERNEL_NAMESPACE=team-a", "KERNEL_LAUNCH_TIMEOUT=90", "KERNEL_MCP_GATEWAY_TOKEN=secret",
		"KERNEL_MCP_TOKEN=x", "HOME=/root", "KERNEL_IMAGE=img=with=equals",
	})
	want := map[string]string{"KERNEL_NAMESPACE": "team-a", "KERNEL_LAUNCH_TIMEOUT": "90", "KERNEL_IMAGE": "img=with=equals"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
