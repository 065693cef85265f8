package kernel

import (
	"strings"
	"testing"
)

// TestGatewayEnv checks the env of a start request: values Enterprise
// Gateway would refuse are refused here with the variable's name, and
// KERNEL_USERNAME is filled in, never as root, unless given.
func TestGatewayEnv(t *testing.T) {
	env, err := gatewayEnv(map[string]string{"KERNEL_NAMESPACE": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if u := env["KERNEL_USERNAME"]; u == "" || u == "root" || env["KERNEL_NAMESPACE"] != "a" {
		t.Fatalf("env %v", env)
	}
	env, _ = gatewayEnv(map[string]string{"KERNEL_USERNAME": "alice"})
	if env["KERNEL_USERNAME"] != "alice" {
		t.Fatalf("KERNEL_USERNAME given was replaced: %v", env)
	}
	_, err = gatewayEnv(map[string]string{"KERNEL_BIG": strings.Repeat("é", maxGatewayEnvValue+1)})
	if err == nil || !strings.Contains(err.Error(), "KERNEL_BIG is 4097 characters") {
		t.Fatalf("err = %v", err)
	}
}

// TestGatewayErrorText checks what a refused request says: the token for
// 401, the server's own reason otherwise, never an HTML page.
func TestGatewayErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    GatewayError
		want string
	}{
		{GatewayError{URL: "http://gw", Method: "POST", Path: "/api/kernels", Status: 401}, "kernel: gateway http://gw refused the token (401 Unauthorized on POST /api/kernels); check the gateway token"},
		{GatewayError{URL: "http://gw", Method: "POST", Path: "/api/kernels", Status: 403, Body: reason([]byte(`{"reason":"Forbidden","message":"User 'root' is not authorized"}`))}, "kernel: gateway http://gw: POST /api/kernels: 403 Forbidden: User 'root' is not authorized"},
		{GatewayError{URL: "http://gw", Method: "GET", Path: "/x", Status: 502, Body: reason([]byte("<html><body>Bad gateway</body></html>"))}, "kernel: gateway http://gw: GET /x: 502 Bad Gateway"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
