// The settings (each flag with its environment variable and default), the
// flags' values on the command line, and --help.

package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
)

// setting is one configuration value: a flag, its environment variable and
// its default, shown by --help.
type setting struct {
	flag string
	env  string
	def  string // default shown in usage; "" shows none
	help string
}

// settings lists every flag that has an environment variable, in the order
// --help shows them. The env names are fixed (see DESIGN.md).
var settings = []setting{
	{"transport", "MCP_TRANSPORT", "stdio", "transport: stdio, sse or streamable-http"},
	{"host", "MCP_HOST", "127.0.0.1", "HTTP bind address; a non-loopback host needs --token"},
	{"port", "MCP_PORT", "8000", "HTTP port (0 picks a free one); streamable HTTP at /mcp, SSE at /sse"},
	{"python", "PYTHON_MCP_INTERPRETER", "the python of the env kernel-mcp was pip-installed in, if it has ipykernel (never a uvx, uv tool or pipx env), else $CONDA_PREFIX's python, else the python3 kernelspec, else python3 on PATH", "Python interpreter whose ipykernel runs the code; one named here without ipykernel stops the server at start"},
	{"kernel", "KERNEL_MCP_KERNEL", "none", "kernelspec name to use instead of an interpreter"},
	{"token", "KERNEL_MCP_TOKEN", "none", "HTTP bearer token clients must send as 'Authorization: Bearer <token>'; on the command line every local user sees it in ps: prefer the variable or --token-file"},
	{"token-file", "KERNEL_MCP_TOKEN_FILE", "none", "file holding the HTTP bearer token alone (a trailing newline is dropped), readable by its owner only (mode 600); not with --token"},
	{"timeout", "KERNEL_MCP_TIMEOUT", "0", "default execution timeout in seconds (fractions allowed); 0 means none"},
	{"max-wait", "KERNEL_MCP_MAX_WAIT", "45", "seconds a call may hold its client: a run still going then is handed off with its run_id (wait_run gives the rest); keep it under the client's own request timeout"},
	{"task-wait", "KERNEL_MCP_TASK_WAIT", "3", "seconds a call of a client that takes MCP tasks (2026-07-28 with io.modelcontextprotocol/tasks) waits for its run before it becomes a task; the hand-off's --max-wait still bounds it"},
	{"task-ttl", "KERNEL_MCP_TASK_TTL", "86400", "seconds an MCP task is kept after it was created, or after its run ended if that is later; then it is forgotten and asking for it says it expired"},
	{"client-idle-timeout", "KERNEL_MCP_CLIENT_IDLE_TIMEOUT", "1800", "seconds an HTTP client's MCP session may send nothing before the server forgets it (its kernel sessions and runs stay); 0 means never"},
	{"output-limit", "KERNEL_MCP_OUTPUT_LIMIT", "20000", "characters of output per result; longer output is cut in the middle"},
	{"state-dir", "KERNEL_MCP_STATE_DIR", "", "directory where session histories are kept; 'none' keeps them in memory only"},
	{"workdir", "KERNEL_MCP_WORKDIR", "the server's working directory", "existing directory where sessions created without a cwd work, and that a relative cwd is taken against; not with --sandbox"},
	{"log-level", "KERNEL_MCP_LOG_LEVEL", "info", "log level on stderr: debug, info, warn or error"},
	{"memory-limit", "KERNEL_MCP_MEMORY_LIMIT", "0", "address-space limit (RLIMIT_AS) of each kernel in bytes, with an optional K, M or G suffix (2G, 512M); 0 means none; Linux only"},
	{"max-message-size", "KERNEL_MCP_MAX_MESSAGE_SIZE", "256M", "largest message a kernel may send, in bytes (K, M, G suffixes; at least 1M); a kernel that announces more is stopped, which costs its own session's variables and nothing else"},
	{"max-sessions", "KERNEL_MCP_MAX_SESSIONS", "0", "most sessions with a running kernel at once; 0 means unlimited"},
	{"pool-size", "KERNEL_MCP_POOL_SIZE", "1", "started, idle kernels kept ready per kind of kernel, so a new session or a reset takes milliseconds; 0 turns the pool off"},
	{"browser", "KERNEL_MCP_BROWSER", "a Chrome, Chromium or Edge found on the machine", "browser that draws Plotly, Vega-Lite and Vega charts and SVG as PNG images for the model (started on the first chart, with no network; confined like the kernels under --sandbox); 'none' draws none: charts then reach the model as their summary"},
	{"chart-timeout", "KERNEL_MCP_CHART_TIMEOUT", "20", "seconds one chart image may take to draw (fractions allowed); past it the browser is stopped and the chart reaches the model as its summary and a line saying why"},
	{"max-inline-image", "KERNEL_MCP_MAX_INLINE_IMAGE", "1M", "largest image put inline in a result, in bytes after base64 encoding (K, M suffixes); a larger one is downscaled for the inline copy and kept whole as a session://{id}/outputs/{n} resource"},
	{"image-mode", "KERNEL_MCP_IMAGE_MODE", "inline", "inline: images come back in results (downscaled past --max-inline-image); link: only as resource links"},
	{"tools", "KERNEL_MCP_TOOLS", "all", toolsHelp()},
	{"idle-timeout", "KERNEL_MCP_IDLE_TIMEOUT", "0", "seconds a kernel may run nothing before it is shut down (history kept); 0 means never"},
	{"start-timeout", "KERNEL_MCP_START_TIMEOUT", "60", "seconds a kernel may take to start before it is given up"},
	{"interrupt-grace", "KERNEL_MCP_INTERRUPT_GRACE", "5", "seconds an interrupted kernel gets to stop before it is restarted"},
	// Remote kernels.
	{"gateway-url", "KERNEL_MCP_GATEWAY_URL", "none", "run kernels on this Jupyter Server, Kernel Gateway or Enterprise Gateway (http:// or https:// base URL) instead of as local processes"},
	{"gateway-token", "KERNEL_MCP_GATEWAY_TOKEN", "none", "token for --gateway-url, sent as 'Authorization: token <token>' (not in the URL's query, which is shown); prefer the variable, since ps shows a command line"},
	// Confinement.
	{"sandbox", "KERNEL_MCP_SANDBOX", "false", "run every kernel under bubblewrap: no network, own PID namespace, only the system's folders shown (read-only) besides the session's cwd; Linux only"},
	{"sandbox-allow", "KERNEL_MCP_SANDBOX_ALLOW", "none", "with --sandbox, an absolute path the kernels (and the tools) may read; repeat the flag, or separate paths with ':' in the variable"},
	{"sandbox-network", "KERNEL_MCP_SANDBOX_NETWORK", "false", "with --sandbox, keep the network (install_package needs it)"},
	{"tokens-file", "KERNEL_MCP_TOKENS_FILE", "none", "HTTP only: a file of 'name token' lines (mode 600), one per user; each user has their own sessions, history and state folder"},
	{"max-sessions-per-user", "KERNEL_MCP_MAX_SESSIONS_PER_USER", "0", "with --tokens-file, most running kernels per user; 0 means unlimited (--max-sessions then counts all users)"},
	// Sign-in with OAuth (oauth.go).
	{"auth", "KERNEL_MCP_AUTH", "token", "how HTTP clients prove who they are: token (--token, --token-file, --tokens-file, or none on loopback) or oauth (kernel-mcp is an OAuth 2.1 protected resource with its own authorization server; people sign in through --hub-url or --oidc-issuer)"},
	{"public-url", "KERNEL_MCP_PUBLIC_URL", "http://<host>:<port> when that is loopback", "with --auth oauth, the https base URL clients and browsers reach this server at (its OAuth issuer; the MCP endpoint is below it)"},
	{"hub-url", "KERNEL_MCP_HUB_URL", "JUPYTERHUB_HOST + JUPYTERHUB_BASE_URL", "with --auth oauth, sign people in through this JupyterHub (public URL); kernel-mcp runs as a hub service, with the JUPYTERHUB_* variables the hub gives it"},
	{"hub-kernels", "KERNEL_MCP_HUB_KERNELS", "false", "with --hub-url, run each person's kernels in their own JupyterHub single-user server, started on demand through the hub's API and reached through its proxy (see docs/teams.md for the scopes kernel-mcp's hub service needs)"},
	{"hub-server-name", "KERNEL_MCP_HUB_SERVER_NAME", "the default server", "with --hub-kernels, the named server to use (the hub needs allow_named_servers)"},
	{"oidc-issuer", "KERNEL_MCP_OIDC_ISSUER", "none", "with --auth oauth, sign people in through this OpenID Connect provider (found by discovery); the client secret, if any, only in KERNEL_MCP_OIDC_CLIENT_SECRET"},
	{"oidc-client-id", "KERNEL_MCP_OIDC_CLIENT_ID", "none", "with --oidc-issuer, kernel-mcp's client id there (its redirect URI: <public-url>/oauth/callback)"},
	{"oidc-user-claim", "KERNEL_MCP_OIDC_USER_CLAIM", "preferred_username", "with --oidc-issuer, the ID token claim that is the user's name"},
	{"allowed-users", "KERNEL_MCP_ALLOWED_USERS", "everyone the provider signs in", "with --auth oauth, comma-separated user names allowed to sign in"},
	{"allowed-groups", "KERNEL_MCP_ALLOWED_GROUPS", "everyone the provider signs in", "with --auth oauth, comma-separated groups whose members may sign in (the hub's groups, or the provider's groups claim)"},
	{"ui", "KERNEL_MCP_UI", "none", "serve the live web view at host:port (port 0 picks a free one; a bare :port binds 127.0.0.1), behind a random token printed with its URL; with sse or streamable-http also under /ui/ on that listener"},
	{"ui-readonly", "KERNEL_MCP_UI_READONLY", "false", "the web view only watches: running cells from it is refused"},
}

// boolSettings are the settings that are switches: "--sandbox" alone means
// true, and the values are true/false, 1/0, yes/no, on/off.
var boolSettings = map[string]bool{"sandbox": true, "sandbox-network": true, "ui-readonly": true, "hub-kernels": true}

// listSettings are the settings that may be repeated on the command line;
// their values are joined with listSep.
var listSettings = map[string]bool{"sandbox-allow": true}

const listSep = ":"

// flagValue is a setting's raw value on the command line. A switch needs no
// argument; a list setting collects every occurrence.
type flagValue struct {
	s          string
	bool, list bool
}

func (v *flagValue) String() string { return v.s }

func (v *flagValue) Set(s string) error {
	if v.list && v.s != "" {
		v.s += listSep + s
	} else {
		v.s = s
	}
	return nil
}

// IsBoolFlag lets a switch be given without a value.
func (v *flagValue) IsBoolFlag() bool { return v.bool }

func settingFor(flagName string) setting {
	for _, s := range settings {
		if s.flag == flagName {
			return s
		}
	}
	panic("kernel-mcp: no setting for flag " + flagName)
}

// invalid builds the one-line error for a bad value of a setting, naming
// both the flag and its environment variable.
func invalid(flagName, value, want string) error {
	s := settingFor(flagName)
	return fmt.Errorf("invalid --%s / %s value %q: %s", s.flag, s.env, value, want)
}

// toolsHelp describes --tools. The minimal profile's tools are read from
// its definition, so that the help cannot name other tools than it offers.
func toolsHelp() string {
	minimal, err := mcpserver.ToolProfile("minimal")
	if err != nil {
		panic(err) // the profile is defined in mcpserver
	}
	return "the tools offered: minimal (" + strings.Join(minimal, ", ") + "), standard (sessions, execution, history), all, or a comma-separated list of tool and profile names"
}

// usage writes --help: every flag with its environment variable and default.
func usage(w io.Writer, getenv func(string) string) {
	usageFor(w, runtime.GOOS, getenv)
}

func usageFor(w io.Writer, goos string, getenv func(string) string) {
	fmt.Fprintf(w, `kernel-mcp %s: an MCP server giving AI assistants persistent Jupyter kernel sessions

Usage:
  kernel-mcp [flags]

Each flag can also be set by the environment variable shown; a flag wins over
its variable. Over stdio (the default) the client starts kernel-mcp itself;
with sse or streamable-http it listens on --host and --port.

Flags:
`, versionString())
	for _, s := range settings {
		def := s.def
		if s.flag == "state-dir" {
			def = defaultStateDir(goos, getenv)
			if def == "" {
				def = "none (no home directory found)"
			}
			def += ", from $XDG_STATE_HOME/kernel-mcp or the platform's state directory"
		}
		fmt.Fprintf(w, "  --%s  (env %s)\n", s.flag, s.env)
		fmt.Fprintf(w, "        %s", s.help)
		if def != "" {
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  --version\n        print the version and exit\n")
	fmt.Fprintf(w, "  --help\n        print this help and exit\n")
}
