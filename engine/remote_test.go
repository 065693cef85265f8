package engine

import (
	"maps"
	"strings"
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

// TestGatewayURLQueryRefused: a gateway URL with a token in its query is
// refused before anything can show it, and the error quotes no query.
func TestGatewayURLQueryRefused(t *testing.T) {
	for _, u := range []string{"http://gw:8888/?token=secrettok", "http://gw:8888/#secrettok"} {
		e, err := New(Config{GatewayURL: u})
		if err == nil {
			e.Close()
			t.Fatalf("%s: accepted", u)
		}
		if strings.Contains(err.Error(), "secrettok") || !strings.Contains(err.Error(), "--gateway-token") {
			t.Errorf("%s: %v", u, err)
		}
	}
}
