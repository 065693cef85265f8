package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// base is the environment every case starts from: a home directory, so the
// default state directory is known.
var base = map[string]string{"HOME": "/home/u"}

func with(extra map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func defaults() config {
	return config{
		Transport:   "stdio",
		Host:        "127.0.0.1",
		Port:        8000,
		OutputLimit: 20000,
		StateDir:    "/home/u/.local/state/kernel-mcp",
		LogLevel:    slog.LevelInfo,

		StartTimeout:      60 * time.Second,
		InterruptGrace:    5 * time.Second,
		MaxWait:           45 * time.Second,
		TaskWait:          3 * time.Second,
		TaskTTL:           24 * time.Hour,
		ClientIdleTimeout: 30 * time.Minute,
		MaxMessageSize:    256 << 20,
		ChartTimeout:      20 * time.Second,
		PoolSize:          1,
		MaxInlineImage:    1 << 20,
		ImageMode:         "inline",
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(*config)
	}{
		{name: "defaults", want: func(*config) {}},
		{name: "help", args: []string{"--help"}, want: func(c *config) { *c = config{Help: true} }},
		{name: "help short", args: []string{"-h"}, want: func(c *config) { *c = config{Help: true} }},
		{name: "help despite bad env", args: []string{"--help"}, env: map[string]string{"MCP_PORT": "x"}, want: func(c *config) { *c = config{Help: true} }},
		{name: "version", args: []string{"--version"}, want: func(c *config) { *c = config{Version: true} }},
		{
			name: "env",
			env: map[string]string{
				"MCP_TRANSPORT": "streamable-http", "MCP_HOST": "0.0.0.0", "MCP_PORT": "9000",
				"PYTHON_MCP_INTERPRETER": "/opt/py/bin/python", "KERNEL_MCP_KERNEL": "ir",
				"KERNEL_MCP_TOKEN": "tok", "KERNEL_MCP_TIMEOUT": "2.5", "KERNEL_MCP_OUTPUT_LIMIT": "100",
				"KERNEL_MCP_STATE_DIR": "/var/km", "KERNEL_MCP_LOG_LEVEL": "debug", "KERNEL_MCP_WORKDIR": "/srv/work",
			},
			want: func(c *config) {
				c.Transport, c.Host, c.Port = "streamable-http", "0.0.0.0", 9000
				c.Python, c.PythonFrom, c.Kernel, c.Token = "/opt/py/bin/python", "PYTHON_MCP_INTERPRETER", "ir", "tok"
				c.WorkDir = "/srv/work"
				c.Timeout, c.OutputLimit, c.StateDir, c.LogLevel = 2500*time.Millisecond, 100, "/var/km", slog.LevelDebug
			},
		},
		{
			name: "flags",
			args: []string{"--transport", "sse", "--host=::1", "--port", "0", "--python", "py", "--kernel", "k",
				"--token", "t", "--timeout", "30", "--output-limit", "5", "--state-dir", "rel/dir", "--log-level", "ERROR", "--workdir", "w"},
			env: map[string]string{"PYTHON_MCP_INTERPRETER": "/opt/py/bin/python"},
			want: func(c *config) {
				c.Transport, c.Host, c.Port = "sse", "::1", 0
				c.Python, c.PythonFrom, c.Kernel, c.Token = "py", "--python", "k", "t"
				c.WorkDir = "w"
				c.Timeout, c.OutputLimit, c.StateDir, c.LogLevel = 30*time.Second, 5, "rel/dir", slog.LevelError
			},
		},
		{
			name: "flag overrides env",
			args: []string{"-transport=stdio", "--port", "1234", "--log-level", "warn", "--timeout", "0"},
			env:  map[string]string{"MCP_TRANSPORT": "sse", "MCP_PORT": "9", "KERNEL_MCP_LOG_LEVEL": "debug", "KERNEL_MCP_TIMEOUT": "10"},
			want: func(c *config) { c.Port, c.LogLevel = 1234, slog.LevelWarn },
		},
		{
			name: "valid flag overrides invalid env",
			args: []string{"--port", "80", "--transport", "sse"},
			env:  map[string]string{"MCP_PORT": "not-a-port", "MCP_TRANSPORT": "carrier-pigeon"},
			want: func(c *config) { c.Port, c.Transport = 80, "sse" },
		},
		{
			name: "empty flag selects default over env",
			args: []string{"--port="},
			env:  map[string]string{"MCP_PORT": "9000"},
			want: func(*config) {},
		},
		{name: "empty env is unset", env: map[string]string{"MCP_PORT": "", "MCP_TRANSPORT": " "}, want: func(*config) {}},
		{name: "whitespace trimmed", env: map[string]string{"MCP_PORT": " 81 "}, want: func(c *config) { c.Port = 81 }},
		{name: "transport case-insensitive", env: map[string]string{"MCP_TRANSPORT": "Streamable-HTTP"}, want: func(c *config) { c.Transport = "streamable-http" }},
		{name: "bracketed IPv6 host", args: []string{"--host", "[::1]"}, want: func(c *config) { c.Host = "::1" }},
		{name: "state dir none", env: map[string]string{"KERNEL_MCP_STATE_DIR": "none"}, want: func(c *config) { c.StateDir = "" }},
		{name: "state dir NONE flag", args: []string{"--state-dir", "NONE"}, want: func(c *config) { c.StateDir = "" }},
		{name: "state dir from XDG", env: map[string]string{"XDG_STATE_HOME": "/x/state"}, want: func(c *config) { c.StateDir = "/x/state/kernel-mcp" }},
		{name: "relative XDG ignored", env: map[string]string{"XDG_STATE_HOME": "x/state"}, want: func(*config) {}},
		{name: "no home", env: map[string]string{"HOME": ""}, want: func(c *config) { c.StateDir, c.NoStateDir = "", true }},
		{name: "timeout zero", env: map[string]string{"KERNEL_MCP_TIMEOUT": "0"}, want: func(*config) {}},
		{name: "timeout fraction", args: []string{"--timeout", ".25"}, want: func(c *config) { c.Timeout = 250 * time.Millisecond }},
		{name: "port max", args: []string{"--port", "65535"}, want: func(c *config) { c.Port = 65535 }},
		{name: "log level warning", env: map[string]string{"KERNEL_MCP_LOG_LEVEL": "warning"}, want: func(c *config) { c.LogLevel = slog.LevelWarn }},
		{
			name: "limits env",
			env: map[string]string{
				"KERNEL_MCP_MEMORY_LIMIT": "2G", "KERNEL_MCP_MAX_SESSIONS": "3", "KERNEL_MCP_IDLE_TIMEOUT": "1.5",
				"KERNEL_MCP_START_TIMEOUT": "10", "KERNEL_MCP_INTERRUPT_GRACE": "0.5",
			},
			want: func(c *config) {
				c.MemoryLimit, c.MaxSessions, c.IdleTimeout = 2<<30, 3, 1500*time.Millisecond
				c.StartTimeout, c.InterruptGrace = 10*time.Second, 500*time.Millisecond
			},
		},
		{
			name: "limits flags override env",
			args: []string{"--memory-limit", "512M", "--max-sessions", "0", "--idle-timeout", "0", "--start-timeout", "2", "--interrupt-grace", "1"},
			env:  map[string]string{"KERNEL_MCP_MEMORY_LIMIT": "2G", "KERNEL_MCP_MAX_SESSIONS": "3", "KERNEL_MCP_IDLE_TIMEOUT": "60"},
			want: func(c *config) { c.MemoryLimit, c.StartTimeout, c.InterruptGrace = 512<<20, 2*time.Second, time.Second },
		},
		{name: "memory limit bytes", args: []string{"--memory-limit", "1000000"}, want: func(c *config) { c.MemoryLimit = 1000000 }},
		{name: "memory limit lower case", args: []string{"--memory-limit", "64k"}, want: func(c *config) { c.MemoryLimit = 64 << 10 }},
		{name: "memory limit GiB", args: []string{"--memory-limit", "1GiB"}, want: func(c *config) { c.MemoryLimit = 1 << 30 }},
		{name: "memory limit GB", args: []string{"--memory-limit", "4GB"}, want: func(c *config) { c.MemoryLimit = 4 << 30 }},
		{name: "memory limit zero", env: map[string]string{"KERNEL_MCP_MEMORY_LIMIT": "0"}, want: func(*config) {}},
		{name: "memory limit empty flag", args: []string{"--memory-limit="}, env: map[string]string{"KERNEL_MCP_MEMORY_LIMIT": "1G"}, want: func(*config) {}},
		{name: "tools minimal", args: []string{"--tools", "minimal"}, want: func(c *config) {
			c.Tools = []string{"get_history", "run_code", "send_input", "session_status", "wait_run"}
		}},
		{name: "tools list and profile", env: map[string]string{"KERNEL_MCP_TOOLS": " run_code, get_value ,minimal"}, want: func(c *config) {
			c.Tools = []string{"get_history", "get_value", "run_code", "send_input", "session_status", "wait_run"}
		}},
		{name: "tools run tool brings wait_run", args: []string{"--tools", "load_data"}, want: func(c *config) { c.Tools = []string{"load_data", "send_input", "wait_run"} }},
		{name: "tools all", args: []string{"--tools", "ALL"}, want: func(*config) {}},
		{name: "gateway", env: map[string]string{"KERNEL_MCP_GATEWAY_URL": "http://gw:8888", "KERNEL_MCP_GATEWAY_TOKEN": "t"}, want: func(c *config) { c.GatewayURL, c.GatewayToken = "http://gw:8888", "t" }},
		{name: "image link mode", env: map[string]string{"KERNEL_MCP_IMAGE_MODE": "Link"}, want: func(c *config) { c.ImageMode = "link" }},
		{name: "max inline image", args: []string{"--max-inline-image", "500K"}, want: func(c *config) { c.MaxInlineImage = 500 << 10 }},
		{name: "max message size", env: map[string]string{"KERNEL_MCP_MAX_MESSAGE_SIZE": "1G"}, want: func(c *config) { c.MaxMessageSize = 1 << 30 }},
		{name: "pool off", env: map[string]string{"KERNEL_MCP_POOL_SIZE": "0"}, want: func(c *config) { c.PoolSize = 0 }},
		{name: "pool flag over env", args: []string{"--pool-size", "3"}, env: map[string]string{"KERNEL_MCP_POOL_SIZE": "0"}, want: func(c *config) { c.PoolSize = 3 }},
		{name: "idle timeout fraction", args: []string{"--idle-timeout", ".5"}, want: func(c *config) { c.IdleTimeout = 500 * time.Millisecond }},
		{name: "max wait", env: map[string]string{"KERNEL_MCP_MAX_WAIT": "2"}, want: func(c *config) { c.MaxWait = 2 * time.Second }},
		{name: "client idle timeout off", args: []string{"--client-idle-timeout", "0"}, want: func(c *config) { c.ClientIdleTimeout = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfigFor("linux", tt.args, env(with(tt.env)))
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			want := defaults()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parseConfig =\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

func TestParseConfigInvalid(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{name: "transport env", env: map[string]string{"MCP_TRANSPORT": "http"}, want: []string{"--transport", "MCP_TRANSPORT", `"http"`}},
		{name: "transport flag", args: []string{"--transport", "websocket"}, want: []string{"--transport", "MCP_TRANSPORT", "websocket"}},
		{name: "port non-numeric", env: map[string]string{"MCP_PORT": "http"}, want: []string{"--port", "MCP_PORT"}},
		{name: "port negative", args: []string{"--port", "-1"}, want: []string{"--port", "MCP_PORT"}},
		{name: "port too large", args: []string{"--port", "65536"}, want: []string{"--port", "MCP_PORT"}},
		{name: "port float", args: []string{"--port", "80.5"}, want: []string{"--port", "MCP_PORT"}},
		{name: "host with path", args: []string{"--host", "127.0.0.1/mcp"}, want: []string{"--host", "MCP_HOST"}},
		{name: "host empty brackets", args: []string{"--host", "[]"}, want: []string{"--host", "MCP_HOST"}},
		{name: "timeout non-numeric", env: map[string]string{"KERNEL_MCP_TIMEOUT": "ten"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT"}},
		{name: "timeout with unit", args: []string{"--timeout", "30s"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT"}},
		{name: "timeout negative", args: []string{"--timeout", "-1"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT", "negative"}},
		{name: "timeout NaN", args: []string{"--timeout", "NaN"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT"}},
		{name: "timeout Inf", args: []string{"--timeout", "+Inf"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT"}},
		{name: "timeout huge", args: []string{"--timeout", "1e12"}, want: []string{"--timeout", "KERNEL_MCP_TIMEOUT", "too large"}},
		{name: "output limit zero", env: map[string]string{"KERNEL_MCP_OUTPUT_LIMIT": "0"}, want: []string{"--output-limit", "KERNEL_MCP_OUTPUT_LIMIT"}},
		{name: "output limit negative", args: []string{"--output-limit", "-5"}, want: []string{"--output-limit", "KERNEL_MCP_OUTPUT_LIMIT"}},
		{name: "output limit non-numeric", args: []string{"--output-limit", "lots"}, want: []string{"--output-limit", "KERNEL_MCP_OUTPUT_LIMIT"}},
		{name: "log level", env: map[string]string{"KERNEL_MCP_LOG_LEVEL": "verbose"}, want: []string{"--log-level", "KERNEL_MCP_LOG_LEVEL"}},
		{name: "memory limit unit", args: []string{"--memory-limit", "2X"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT", "suffix"}},
		{name: "memory limit fraction", args: []string{"--memory-limit", "1.5G"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT"}},
		{name: "memory limit negative", env: map[string]string{"KERNEL_MCP_MEMORY_LIMIT": "-1"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT"}},
		{name: "memory limit suffix only", args: []string{"--memory-limit", "G"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT"}},
		{name: "memory limit double suffix", args: []string{"--memory-limit", "1KM"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT"}},
		{name: "memory limit overflow", args: []string{"--memory-limit", "9000000000G"}, want: []string{"--memory-limit", "KERNEL_MCP_MEMORY_LIMIT", "too large"}},
		{name: "gateway not a URL", args: []string{"--gateway-url", "gw:8888"}, want: []string{"--gateway-url", "KERNEL_MCP_GATEWAY_URL", "http://"}},
		{name: "gateway with python", args: []string{"--gateway-url", "http://gw", "--python", "/usr/bin/python3"}, want: []string{"--python", "cannot be used with --gateway-url"}},
		{name: "gateway with memory limit", env: map[string]string{"KERNEL_MCP_GATEWAY_URL": "http://gw", "KERNEL_MCP_MEMORY_LIMIT": "1G"}, want: []string{"--memory-limit", "cannot be used with --gateway-url"}},
		{name: "gateway with workdir", env: map[string]string{"KERNEL_MCP_GATEWAY_URL": "http://gw", "KERNEL_MCP_WORKDIR": "/srv"}, want: []string{"--workdir", "KERNEL_MCP_WORKDIR", "cannot be used with --gateway-url"}},
		{name: "workdir with sandbox", args: []string{"--workdir", "/srv", "--sandbox"}, want: []string{"--workdir", "cannot be used with --sandbox", "--sandbox-allow"}},
		{name: "gateway token alone", args: []string{"--gateway-token", "t"}, want: []string{"--gateway-token", "needs --gateway-url"}},
		{name: "unknown tool", args: []string{"--tools", "run_code,rm_rf"}, want: []string{"--tools", "KERNEL_MCP_TOOLS", `"rm_rf"`, "minimal, standard"}},
		{name: "no tools", env: map[string]string{"KERNEL_MCP_TOOLS": ","}, want: []string{"--tools", "no tools named"}},
		{name: "bad image mode", args: []string{"--image-mode", "ascii-art"}, want: []string{"--image-mode", "KERNEL_MCP_IMAGE_MODE", "inline or link"}},
		{name: "inline image too small", args: []string{"--max-inline-image", "10"}, want: []string{"--max-inline-image", "at least 1K"}},
		{name: "message size too small", args: []string{"--max-message-size", "64K"}, want: []string{"--max-message-size", "at least 1M"}},
		{name: "message size not a size", args: []string{"--max-message-size", "lots"}, want: []string{"--max-message-size", "at least 1M"}},
		{name: "pool size negative", args: []string{"--pool-size", "-1"}, want: []string{"--pool-size", "KERNEL_MCP_POOL_SIZE", "0 (no pool) to 16"}},
		{name: "pool size too big", env: map[string]string{"KERNEL_MCP_POOL_SIZE": "100"}, want: []string{"--pool-size", "KERNEL_MCP_POOL_SIZE"}},
		{name: "max sessions negative", args: []string{"--max-sessions", "-1"}, want: []string{"--max-sessions", "KERNEL_MCP_MAX_SESSIONS"}},
		{name: "max sessions non-numeric", env: map[string]string{"KERNEL_MCP_MAX_SESSIONS": "many"}, want: []string{"--max-sessions", "KERNEL_MCP_MAX_SESSIONS"}},
		{name: "idle timeout negative", args: []string{"--idle-timeout", "-5"}, want: []string{"--idle-timeout", "KERNEL_MCP_IDLE_TIMEOUT", "negative"}},
		{name: "max wait zero", args: []string{"--max-wait", "0"}, want: []string{"--max-wait", "KERNEL_MCP_MAX_WAIT", "more than 0"}},
		{name: "max wait unit", env: map[string]string{"KERNEL_MCP_MAX_WAIT": "1m"}, want: []string{"--max-wait", "KERNEL_MCP_MAX_WAIT"}},
		{name: "idle timeout unit", env: map[string]string{"KERNEL_MCP_IDLE_TIMEOUT": "5m"}, want: []string{"--idle-timeout", "KERNEL_MCP_IDLE_TIMEOUT"}},
		{name: "start timeout zero", args: []string{"--start-timeout", "0"}, want: []string{"--start-timeout", "KERNEL_MCP_START_TIMEOUT", "more than 0"}},
		{name: "start timeout non-numeric", env: map[string]string{"KERNEL_MCP_START_TIMEOUT": "soon"}, want: []string{"--start-timeout", "KERNEL_MCP_START_TIMEOUT"}},
		{name: "interrupt grace zero", env: map[string]string{"KERNEL_MCP_INTERRUPT_GRACE": "0"}, want: []string{"--interrupt-grace", "KERNEL_MCP_INTERRUPT_GRACE", "more than 0"}},
		{name: "interrupt grace negative", args: []string{"--interrupt-grace", "-1"}, want: []string{"--interrupt-grace", "KERNEL_MCP_INTERRUPT_GRACE"}},
		{name: "unknown flag", args: []string{"--bogus"}, want: []string{"bogus", "--help"}},
		{name: "missing value", args: []string{"--port"}, want: []string{"port"}},
		{name: "positional", args: []string{"serve"}, want: []string{"unexpected argument", "serve"}},
		{name: "bad version value", args: []string{"--version=maybe"}, want: []string{"version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfigFor("linux", tt.args, env(with(tt.env)))
			if err == nil {
				t.Fatal("parseConfig succeeded, want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// A memory limit is refused where kernels could not get one, at start-up
// rather than at every kernel start; 0 is fine everywhere.
func TestMemoryLimitLinuxOnly(t *testing.T) {
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		_, err := parseConfigFor(goos, []string{"--memory-limit", "1G"}, env(base))
		if err == nil || !strings.Contains(err.Error(), "only supported on Linux") || !strings.Contains(err.Error(), "KERNEL_MCP_MEMORY_LIMIT") {
			t.Errorf("%s: err = %v, want a Linux-only error", goos, err)
		}
		if _, err := parseConfigFor(goos, []string{"--memory-limit", "0"}, env(base)); err != nil {
			t.Errorf("%s: --memory-limit 0: %v", goos, err)
		}
	}
}

func TestDefaultStateDir(t *testing.T) {
	tests := []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/kernel-mcp"},
		{"linux", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/s"}, "/s/kernel-mcp"},
		{"linux", map[string]string{}, ""},
		{"freebsd", map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/kernel-mcp"},
		{"darwin", map[string]string{"HOME": "/Users/u"}, "/Users/u/Library/Application Support/kernel-mcp"},
		{"darwin", map[string]string{"HOME": "/Users/u", "XDG_STATE_HOME": "/Users/u/.state"}, "/Users/u/.state/kernel-mcp"},
		{"windows", map[string]string{"LocalAppData": `C:\Users\u\AppData\Local`}, `C:\Users\u\AppData\Local\kernel-mcp`},
		{"windows", map[string]string{"USERPROFILE": `C:\Users\u`}, `C:\Users\u\AppData\Local\kernel-mcp`},
		{"windows", map[string]string{"LocalAppData": `C:\L`, "XDG_STATE_HOME": `D:\state`}, `D:\state\kernel-mcp`},
		{"windows", map[string]string{"LocalAppData": `C:\L`, "XDG_STATE_HOME": `state`}, `C:\L\kernel-mcp`},
		{"windows", map[string]string{}, ""},
	}
	for _, tt := range tests {
		if got := defaultStateDir(tt.goos, env(tt.env)); got != tt.want {
			t.Errorf("defaultStateDir(%s, %v) = %q, want %q", tt.goos, tt.env, got, tt.want)
		}
	}
}

func TestUsageListsEveryFlagAndEnv(t *testing.T) {
	var buf bytes.Buffer
	usageFor(&buf, "linux", env(base))
	out := buf.String()
	for _, s := range settings {
		if !strings.Contains(out, "--"+s.flag+" ") || !strings.Contains(out, s.env) {
			t.Errorf("usage lacks --%s / %s", s.flag, s.env)
		}
	}
	for _, w := range []string{"--version", "--help", "(default stdio)", "(default 127.0.0.1)", "(default 8000)",
		"(default 20000)", "(default info)", "(default 0)", "(default 60)", "(default 5)", "/home/u/.local/state/kernel-mcp"} {
		if !strings.Contains(out, w) {
			t.Errorf("usage lacks %q", w)
		}
	}
}

// --help names exactly the tools the minimal profile offers.
func TestUsageListsTheMinimalProfile(t *testing.T) {
	var buf bytes.Buffer
	usageFor(&buf, "linux", env(base))
	out := buf.String()
	minimal, err := mcpserver.ToolProfile("minimal")
	if err != nil {
		t.Fatal(err)
	}
	want := "minimal (" + strings.Join(minimal, ", ") + ")"
	if !strings.Contains(out, want) {
		t.Errorf("usage does not list the minimal profile as %q:\n%s", want, out)
	}
	for _, tool := range []string{"wait_run", "send_input"} {
		if !slices.Contains(minimal, tool) {
			t.Errorf("the minimal profile lacks %s", tool)
		}
	}
}

// A gateway URL that is refused is quoted without its password.
func TestGatewayURLErrorHidesPassword(t *testing.T) {
	for _, v := range []string{"ftp://user:secretpass@gw:8888", "http://user:secretpass@", "http://user:secretpass@gw:8888/%zz"} {
		_, err := parseConfigFor("linux", []string{"--gateway-url", v}, env(nil))
		if err == nil || strings.Contains(err.Error(), "secretpass") || !strings.Contains(err.Error(), "--gateway-url") {
			t.Errorf("--gateway-url %s: %v", v, err)
		}
	}
}

// A gateway URL with a query string (where Jupyter prints its token) or a
// fragment is refused, naming --gateway-token and quoting no query.
func TestGatewayURLQueryRefused(t *testing.T) {
	for _, v := range []string{"http://gw:8888/?token=secrettok", "http://gw:8888/lab?token=secrettok", "http://gw:8888/#secrettok", "http://gw:8888/?"} {
		_, err := parseConfigFor("linux", []string{"--gateway-url", v}, env(nil))
		if err == nil || strings.Contains(err.Error(), "secrettok") || !strings.Contains(err.Error(), "--gateway-token") {
			t.Errorf("--gateway-url %s: %v", v, err)
		}
	}
	if cfg, err := parseConfigFor("linux", []string{"--gateway-url", "http://gw:8888/base/"}, env(nil)); err != nil || cfg.GatewayURL != "http://gw:8888/base/" {
		t.Errorf("a base URL without a query: %+v, %v", cfg, err)
	}
}

// A relative state directory or tokens file is made absolute against the
// directory the server starts in: bwrap would take it against its new root.
func TestConfigPathsMadeAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{StateDir: "state11", TokensFile: "conf/tokens"}
	if err := cfg.absolutePaths(); err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != filepath.Join(wd, "state11") || cfg.TokensFile != filepath.Join(wd, "conf/tokens") {
		t.Errorf("state dir %q, tokens file %q", cfg.StateDir, cfg.TokensFile)
	}
	cfg = config{StateDir: "/var/km"}
	if err := cfg.absolutePaths(); err != nil || cfg.StateDir != "/var/km" || cfg.TokensFile != "" {
		t.Errorf("absolute and empty paths changed: %+v, %v", cfg, err)
	}
}
