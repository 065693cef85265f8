package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
)

// Transports the server can run over.
const (
	transportStdio          = "stdio"
	transportSSE            = "sse"
	transportStreamableHTTP = "streamable-http"
)

// stateDirNone is the --state-dir value that keeps histories in memory only.
const stateDirNone = "none"

// config is the command's configuration, from flags and environment.
type config struct {
	Transport string
	Host      string
	Port      int
	Python    string
	Kernel    string
	Token     string
	// TokenFile names the file the token is read from at start (into
	// Token), so that it does not show in ps.
	TokenFile string
	Timeout   time.Duration // 0: none
	MaxWait   time.Duration // longest a call holds its client
	TaskWait  time.Duration // how long a call of a tasks client waits before it becomes a task
	TaskTTL   time.Duration // how long a task is kept
	// ClientIdleTimeout closes HTTP client sessions that sent nothing for
	// that long; 0 never does.
	ClientIdleTimeout time.Duration
	OutputLimit       int
	StateDir          string // "": in memory only
	WorkDir           string // sessions' default cwd; "": the server's
	LogLevel          slog.Level

	MemoryLimit    int64         // bytes of address space per kernel; 0: none
	MaxMessageSize int64         // the largest message a kernel may send
	MaxSessions    int           // sessions with a running kernel; 0: unlimited
	PoolSize       int           // warm kernels kept per kind; 0: none
	MaxInlineImage int64         // bytes of base64 an inline image may have
	Browser        string        // draws charts as images; "": find one; "none": none
	ChartTimeout   time.Duration // bounds one chart image
	ImageMode      string        // inline or link
	Tools          []string      // tools to offer; nil: all
	IdleTimeout    time.Duration // 0: never stop idle kernels
	StartTimeout   time.Duration
	InterruptGrace time.Duration
	GatewayURL     string // "": kernels run locally
	GatewayToken   string
	// HubKernels runs each signed-in hub user's kernels in their own
	// JupyterHub server (hubkernels.go), HubServerName's ("": the default).
	HubKernels    bool
	HubServerName string

	// Sandbox runs every kernel under bubblewrap (Linux only);
	// SandboxAllow are more paths it may read, SandboxNetwork keeps the
	// network.
	Sandbox        bool
	SandboxAllow   []string
	SandboxNetwork bool
	// TokensFile names one user per line (name and token); each user has
	// sessions of their own. MaxSessionsPerUser bounds each user's
	// running kernels; MaxSessions then bounds all users' together.
	TokensFile         string
	MaxSessionsPerUser int

	// UI is the web view's listen address (host:port), "" for none;
	// UIReadOnly refuses cells from it.
	UI         string
	UIReadOnly bool

	// OAuth is the --auth oauth settings (oauth.go); nil with --auth token.
	OAuth *oauthConfig

	// PythonFrom names where Python was set: "--python" or
	// "PYTHON_MCP_INTERPRETER".
	PythonFrom string

	// NoStateDir is set when no default state directory could be found
	// (no home directory) and StateDir fell back to in-memory.
	NoStateDir bool

	Help    bool // --help: print usage and exit 0
	Version bool // --version: print the version and exit 0
}

// isHTTP reports whether the transport listens on a TCP port.
func (c config) isHTTP() bool {
	return c.Transport == transportSSE || c.Transport == transportStreamableHTTP
}

// maxPoolSize bounds --pool-size: each warm kernel is a Python process of
// 50-100 MB sitting idle.
const maxPoolSize = 16

// parseConfig builds the configuration from command-line arguments (without
// the program name) and an environment lookup. An environment variable gives
// a setting's default; a flag on the command line wins over it. It is pure:
// everything it reads comes through args and getenv.
//
// Every error it returns is a usage error (exit status 2).
func parseConfig(args []string, getenv func(string) string) (config, error) {
	return parseConfigFor(runtime.GOOS, args, getenv)
}

func parseConfigFor(goos string, args []string, getenv func(string) string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("kernel-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	values := make(map[string]*flagValue, len(settings))
	for _, s := range settings {
		values[s.flag] = &flagValue{bool: boolSettings[s.flag], list: listSettings[s.flag]}
		fs.Var(values[s.flag], s.flag, s.help)
	}
	fs.BoolVar(&cfg.Version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{Help: true}, nil
		}
		return config{}, fmt.Errorf("%v (see --help)", err)
	}
	if cfg.Version {
		return config{Version: true}, nil
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}

	setOnCommandLine := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { setOnCommandLine[f.Name] = true })
	// get returns the effective raw value of a setting: the flag if given
	// (even empty, which selects the default), else the env var, else "".
	get := func(name string) string {
		if setOnCommandLine[name] {
			return strings.TrimSpace(values[name].s)
		}
		return strings.TrimSpace(getenv(settingFor(name).env))
	}

	switch v := strings.ToLower(get("transport")); v {
	case "":
		cfg.Transport = transportStdio
	case transportStdio, transportSSE, transportStreamableHTTP:
		cfg.Transport = v
	default:
		return config{}, invalid("transport", get("transport"), "want stdio, sse or streamable-http")
	}

	cfg.Host = "127.0.0.1"
	if v := get("host"); v != "" {
		// Accept a bracketed IPv6 literal as people write it in URLs.
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			v = v[1 : len(v)-1]
		}
		if v == "" || strings.ContainsAny(v, "/ ") {
			return config{}, invalid("host", get("host"), "want a host name or IP address")
		}
		cfg.Host = v
	}

	cfg.Port = 8000
	if v := get("port"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return config{}, invalid("port", v, "want an integer from 0 to 65535")
		}
		cfg.Port = p
	}

	cfg.Python = get("python")
	if cfg.Python != "" {
		cfg.PythonFrom = settingFor("python").env
		if setOnCommandLine["python"] {
			cfg.PythonFrom = "--python"
		}
	}
	cfg.WorkDir = get("workdir")
	cfg.Kernel = get("kernel")
	cfg.Token = get("token")
	cfg.TokenFile = get("token-file")
	if cfg.Token != "" && cfg.TokenFile != "" {
		return config{}, invalid("token-file", cfg.TokenFile, "give the token once: --token / KERNEL_MCP_TOKEN or a token file, not both")
	}

	if v := get("timeout"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return config{}, invalid("timeout", v, err.Error())
		}
		cfg.Timeout = d
	}

	cfg.OutputLimit = 20000
	if v := get("output-limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return config{}, invalid("output-limit", v, "want a positive integer (characters)")
		}
		cfg.OutputLimit = n
	}

	switch v := get("state-dir"); {
	case strings.EqualFold(v, stateDirNone):
		cfg.StateDir = ""
	case v != "":
		cfg.StateDir = v
	default:
		cfg.StateDir = defaultStateDir(goos, getenv)
		cfg.NoStateDir = cfg.StateDir == ""
	}

	switch v := strings.ToLower(get("log-level")); v {
	case "", "info":
		cfg.LogLevel = slog.LevelInfo
	case "debug":
		cfg.LogLevel = slog.LevelDebug
	case "warn", "warning":
		cfg.LogLevel = slog.LevelWarn
	case "error":
		cfg.LogLevel = slog.LevelError
	default:
		return config{}, invalid("log-level", get("log-level"), "want debug, info, warn or error")
	}

	if v := get("memory-limit"); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return config{}, invalid("memory-limit", v, err.Error())
		}
		if n > 0 && goos != "linux" {
			return config{}, invalid("memory-limit", v, "a memory limit is only supported on Linux (use 0 or leave it unset)")
		}
		cfg.MemoryLimit = n
	}

	cfg.Browser = get("browser")
	if v := cfg.Browser; v != "" && v != "none" {
		if _, err := exec.LookPath(v); err != nil {
			return config{}, invalid("browser", v, "want the path of a Chrome, Chromium or Edge that can be run (or 'none'): "+err.Error())
		}
	}

	cfg.ChartTimeout = 20 * time.Second
	if v := get("chart-timeout"); v != "" {
		d, err := parseSeconds(v)
		if err != nil || d <= 0 {
			return config{}, invalid("chart-timeout", v, "want a positive number of seconds, such as 20 or 2.5")
		}
		cfg.ChartTimeout = d
	}

	cfg.MaxMessageSize = kernel.DefaultMaxMessageSize
	if v := get("max-message-size"); v != "" {
		n, err := parseBytes(v)
		if err != nil || n < 1<<20 {
			return config{}, invalid("max-message-size", v, "want at least 1M bytes, with an optional K, M or G suffix, such as 256M or 1G")
		}
		cfg.MaxMessageSize = n
	}

	if v := get("max-sessions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return config{}, invalid("max-sessions", v, "want a non-negative integer (0 means unlimited)")
		}
		cfg.MaxSessions = n
	}

	cfg.PoolSize = 1
	if v := get("pool-size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxPoolSize {
			return config{}, invalid("pool-size", v, fmt.Sprintf("want an integer from 0 (no pool) to %d", maxPoolSize))
		}
		cfg.PoolSize = n
	}

	cfg.MaxInlineImage = 1 << 20
	if v := get("max-inline-image"); v != "" {
		n, err := parseBytes(v)
		if err != nil || n < 1024 {
			return config{}, invalid("max-inline-image", v, "want at least 1K bytes, with an optional K or M suffix, such as 1M or 500K")
		}
		cfg.MaxInlineImage = n
	}

	cfg.ImageMode = "inline"
	if v := strings.ToLower(get("image-mode")); v != "" {
		if v != "inline" && v != "link" {
			return config{}, invalid("image-mode", get("image-mode"), "want inline or link")
		}
		cfg.ImageMode = v
	}

	if v := get("tools"); v != "" {
		tools, err := mcpserver.ToolProfile(v)
		if err != nil {
			return config{}, invalid("tools", v, err.Error())
		}
		cfg.Tools = tools
	}

	if v := get("idle-timeout"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return config{}, invalid("idle-timeout", v, err.Error())
		}
		cfg.IdleTimeout = d
	}

	cfg.MaxWait = 45 * time.Second
	if v := get("max-wait"); v != "" {
		d, err := parseSeconds(v)
		if err == nil && d <= 0 {
			err = errors.New("must be more than 0")
		}
		if err != nil {
			return config{}, invalid("max-wait", v, err.Error())
		}
		cfg.MaxWait = d
	}

	cfg.TaskWait = 3 * time.Second
	if v := get("task-wait"); v != "" {
		d, err := parseSeconds(v)
		if err == nil && d <= 0 {
			err = errors.New("must be more than 0")
		}
		if err != nil {
			return config{}, invalid("task-wait", v, err.Error())
		}
		cfg.TaskWait = d
	}
	cfg.TaskTTL = 24 * time.Hour
	if v := get("task-ttl"); v != "" {
		d, err := parseSeconds(v)
		if err == nil && d <= 0 {
			err = errors.New("must be more than 0")
		}
		if err != nil {
			return config{}, invalid("task-ttl", v, err.Error())
		}
		cfg.TaskTTL = d
	}

	cfg.ClientIdleTimeout = 30 * time.Minute
	if v := get("client-idle-timeout"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return config{}, invalid("client-idle-timeout", v, err.Error())
		}
		cfg.ClientIdleTimeout = d
	}

	cfg.StartTimeout = 60 * time.Second
	if v := get("start-timeout"); v != "" {
		d, err := parseSeconds(v)
		if err == nil && d <= 0 {
			err = errors.New("must be more than 0")
		}
		if err != nil {
			return config{}, invalid("start-timeout", v, strings.TrimSuffix(err.Error(), " (0 means none)"))
		}
		cfg.StartTimeout = d
	}

	cfg.InterruptGrace = 5 * time.Second
	if v := get("interrupt-grace"); v != "" {
		d, err := parseSeconds(v)
		if err == nil && d <= 0 {
			err = errors.New("must be more than 0")
		}
		if err != nil {
			return config{}, invalid("interrupt-grace", v, strings.TrimSuffix(err.Error(), " (0 means none)"))
		}
		cfg.InterruptGrace = d
	}

	cfg.GatewayToken = get("gateway-token")
	if v := get("gateway-url"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			shown := "(not a URL)"
			if err == nil {
				shown = u.Redacted()
			}
			return config{}, invalid("gateway-url", shown, "want an http:// or https:// URL such as http://127.0.0.1:8888")
		}
		if err := gatewayURLQuery(u); err != nil {
			return config{}, err
		}
		if cfg.Python != "" {
			return config{}, invalid("python", cfg.Python, "cannot be used with --gateway-url: the gateway's kernelspecs decide the interpreter (pick one with --kernel)")
		}
		if cfg.MemoryLimit > 0 {
			return config{}, invalid("memory-limit", get("memory-limit"), "cannot be used with --gateway-url: a gateway's kernels get their limits from the gateway")
		}
		if cfg.WorkDir != "" {
			return config{}, invalid("workdir", cfg.WorkDir, "cannot be used with --gateway-url: a gateway's kernels work in the gateway's folders")
		}
		cfg.GatewayURL = v
	} else if cfg.GatewayToken != "" {
		return config{}, invalid("gateway-token", "(hidden)", "needs --gateway-url")
	}
	if err := parseSandbox(&cfg, goos, get); err != nil {
		return config{}, err
	}
	if cfg.Sandbox && cfg.GatewayURL != "" {
		return config{}, invalid("sandbox", "true", "cannot be used with --gateway-url: the sandbox confines local kernels, and a gateway's kernels run where the gateway puts them")
	}
	if err := parseUsers(&cfg, get); err != nil {
		return config{}, err
	}
	if cfg.WorkDir != "" && cfg.Sandbox {
		return config{}, invalid("workdir", cfg.WorkDir, "cannot be used with --sandbox: sandboxed kernels write only in <state dir>/work, a folder that holds nothing else (a workdir could hold the state dir, a home or the interpreter); read data in place with --sandbox-allow")
	}
	if err := parseUI(&cfg, get); err != nil {
		return config{}, err
	}
	if err := parseOAuth(&cfg, get, getenv); err != nil {
		return config{}, err
	}
	if err := parseHubKernels(&cfg, get); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// gatewayURLQuery refuses a gateway URL with a query string or a fragment.
// Jupyter prints its URL as http://host:8888/lab?token=<token>, and people
// paste it as it is; but the URL is shown in results, errors and logs, so a
// token in it would reach the model, and the gateway's API paths would
// land inside the query anyway. The token goes in --gateway-token, sent as
// a header and never shown. The error shows the URL without its query and
// suggests the base URL: Jupyter's /lab or /tree page is no part of it.
func gatewayURLQuery(u *url.URL) error {
	if u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && u.RawFragment == "" {
		return nil
	}
	bare := *u
	bare.RawQuery, bare.ForceQuery, bare.Fragment, bare.RawFragment = "", false, "", ""
	shown := bare.Redacted() + "?…"
	for _, page := range []string{"/lab", "/tree"} {
		bare.Path = strings.TrimSuffix(strings.TrimSuffix(bare.Path, "/"), page)
	}
	bare.Path, bare.RawPath = bare.Path+"/", ""
	return invalid("gateway-url", shown, fmt.Sprintf("a query string or #fragment cannot be used: the URL is shown in results and logs, and a token in it would be too; give the base URL and the token apart, as --gateway-url %s --gateway-token <token>, or better the token in KERNEL_MCP_GATEWAY_TOKEN, which ps does not show", bare.Redacted()))
}

// parseUI reads the web view's settings. A bare ":port" binds loopback:
// reaching the view from elsewhere takes a host written out.
func parseUI(cfg *config, get func(string) string) error {
	var err error
	if cfg.UIReadOnly, err = parseSwitch("ui-readonly", get("ui-readonly")); err != nil {
		return err
	}
	v := get("ui")
	if v == "" || strings.EqualFold(v, "none") {
		if cfg.UIReadOnly {
			return invalid("ui-readonly", get("ui-readonly"), "has no effect without --ui / KERNEL_MCP_UI")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return invalid("ui", v, "want host:port, such as 127.0.0.1:8765 (port 0 picks a free one)")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return invalid("ui", v, "want a port from 0 to 65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if strings.ContainsAny(host, "/ ") {
		return invalid("ui", v, "want a host name or IP address before the port")
	}
	cfg.UI = net.JoinHostPort(host, port)
	return nil
}

// absolutePaths makes the state directory, the work directory and the
// tokens file absolute, against the directory the server starts in: they
// are handed to the sandbox, where a relative path would name something
// else (bwrap takes it against its new root), and the state directory is
// shown in logs.
func (c *config) absolutePaths() error {
	for _, p := range []struct {
		name string
		v    *string
	}{{"state-dir", &c.StateDir}, {"workdir", &c.WorkDir}, {"tokens-file", &c.TokensFile}} {
		if *p.v == "" || filepath.IsAbs(*p.v) {
			continue
		}
		abs, err := filepath.Abs(*p.v)
		if err != nil {
			return invalid(p.name, *p.v, err.Error())
		}
		*p.v = abs
	}
	return nil
}

// parseUsers reads the multi-user settings.
func parseUsers(cfg *config, get func(string) string) error {
	cfg.TokensFile = get("tokens-file")
	if v := get("max-sessions-per-user"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return invalid("max-sessions-per-user", v, "want a non-negative integer (0 means unlimited)")
		}
		cfg.MaxSessionsPerUser = n
	}
	switch {
	case cfg.TokensFile == "" && cfg.MaxSessionsPerUser > 0:
		return invalid("max-sessions-per-user", get("max-sessions-per-user"), "has no effect without --tokens-file / KERNEL_MCP_TOKENS_FILE")
	case cfg.TokensFile == "":
	case !cfg.isHTTP():
		return invalid("tokens-file", cfg.TokensFile, "users are told apart by their HTTP bearer tokens: use --transport streamable-http or sse")
	case cfg.Token != "" || cfg.TokenFile != "":
		return invalid("tokens-file", cfg.TokensFile, "give --token / KERNEL_MCP_TOKEN or --token-file / KERNEL_MCP_TOKEN_FILE (one user) or a tokens file (several), not both")
	}
	return nil
}

// parseSandbox reads the confinement settings.
func parseSandbox(cfg *config, goos string, get func(string) string) error {
	var err error
	if cfg.Sandbox, err = parseSwitch("sandbox", get("sandbox")); err != nil {
		return err
	}
	if cfg.SandboxNetwork, err = parseSwitch("sandbox-network", get("sandbox-network")); err != nil {
		return err
	}
	if v := get("sandbox-allow"); v != "" {
		for _, p := range strings.Split(v, listSep) {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if !isAbs(goos, p) {
				return invalid("sandbox-allow", p, "want an absolute path")
			}
			cfg.SandboxAllow = append(cfg.SandboxAllow, filepath.Clean(p))
		}
	}
	if cfg.Sandbox && goos != "linux" {
		return invalid("sandbox", get("sandbox"), "the sandbox uses bubblewrap, which is Linux-only; this is "+goos)
	}
	if !cfg.Sandbox && (cfg.SandboxNetwork || len(cfg.SandboxAllow) > 0) {
		name := "sandbox-network"
		if len(cfg.SandboxAllow) > 0 {
			name = "sandbox-allow"
		}
		return invalid(name, get(name), "has no effect without --sandbox / KERNEL_MCP_SANDBOX")
	}
	return nil
}
