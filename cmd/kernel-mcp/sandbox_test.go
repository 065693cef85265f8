package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The sandbox switches: bare, with values, from the environment; allowed
// paths repeat on the command line and are ':'-separated in the variable.
func TestParseSandboxConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		sandbox bool
		network bool
		allow   []string
	}{
		{name: "off"},
		{name: "bare flag", args: []string{"--sandbox"}, sandbox: true},
		{name: "flag false", args: []string{"--sandbox=false"}, env: map[string]string{"KERNEL_MCP_SANDBOX": "1"}},
		{name: "env", env: map[string]string{"KERNEL_MCP_SANDBOX": "yes", "KERNEL_MCP_SANDBOX_NETWORK": "on"}, sandbox: true, network: true},
		{name: "allow repeated", args: []string{"--sandbox", "--sandbox-allow", "/data", "--sandbox-allow=/opt/x/"}, sandbox: true, allow: []string{"/data", "/opt/x"}},
		{name: "allow env list", env: map[string]string{"KERNEL_MCP_SANDBOX": "true", "KERNEL_MCP_SANDBOX_ALLOW": "/a:/b"}, sandbox: true, allow: []string{"/a", "/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfigFor("linux", tt.args, env(with(tt.env)))
			if err != nil {
				t.Fatal(err)
			}
			if c.Sandbox != tt.sandbox || c.SandboxNetwork != tt.network || !reflect.DeepEqual(c.SandboxAllow, tt.allow) {
				t.Errorf("sandbox %v network %v allow %q; want %v %v %q", c.Sandbox, c.SandboxNetwork, c.SandboxAllow, tt.sandbox, tt.network, tt.allow)
			}
		})
	}
}

func TestParseSandboxConfigInvalid(t *testing.T) {
	tests := []struct {
		name string
		goos string
		args []string
		env  map[string]string
		want []string
	}{
		{name: "not linux", goos: "darwin", args: []string{"--sandbox"}, want: []string{"--sandbox", "KERNEL_MCP_SANDBOX", "Linux-only", "darwin"}},
		{name: "windows", goos: "windows", env: map[string]string{"KERNEL_MCP_SANDBOX": "1"}, want: []string{"Linux-only", "windows"}},
		{name: "bad switch", goos: "linux", env: map[string]string{"KERNEL_MCP_SANDBOX": "maybe"}, want: []string{"KERNEL_MCP_SANDBOX", "true or false"}},
		{name: "relative allow", goos: "linux", args: []string{"--sandbox", "--sandbox-allow", "data"}, want: []string{"--sandbox-allow", "absolute"}},
		{name: "allow without sandbox", goos: "linux", args: []string{"--sandbox-allow", "/data"}, want: []string{"--sandbox-allow", "without --sandbox"}},
		{name: "network without sandbox", goos: "linux", args: []string{"--sandbox-network"}, want: []string{"--sandbox-network", "without --sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfigFor(tt.goos, tt.args, env(with(tt.env)))
			if err == nil {
				t.Fatal("parseConfig succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q: want one line containing %q", err, w)
				}
			}
		})
	}
}

// With --tokens-file and --state-dir none, each user's work directory is a
// temporary folder: allowing a path that holds the temporary directory
// would show every user's files to the others, and is refused at start.
func TestSandboxAllowOverUsersTempWork(t *testing.T) {
	tmp := os.TempDir()
	for _, allow := range []string{tmp, "/"} {
		_, err := sandboxOptions(config{Sandbox: true, TokensFile: "tokens", SandboxAllow: []string{allow}})
		if err == nil || !strings.Contains(err.Error(), "--state-dir") || !strings.Contains(err.Error(), allow) {
			t.Errorf("--sandbox-allow %s with --tokens-file and --state-dir none: %v", allow, err)
		}
	}
}
