package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
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
	Timeout   time.Duration // 0: none
	MaxWait   time.Duration // longest a call holds its client
	// ClientIdleTimeout closes HTTP client sessions that sent nothing for
	// that long; 0 never does.
	ClientIdleTimeout time.Duration
	OutputLimit       int
	StateDir          string // "": in memory only
	LogLevel          slog.Level

	MemoryLimit    int64         // bytes of address space per kernel; 0: none
	MaxSessions    int           // sessions with a running kernel; 0: unlimited
	PoolSize       int           // warm kernels kept per kind; 0: none
	MaxInlineImage int64         // bytes of base64 an inline image may have
	ImageMode      string        // inline or link
	Tools          []string      // tools to offer; nil: all
	IdleTimeout    time.Duration // 0: never stop idle kernels
	StartTimeout   time.Duration
	InterruptGrace time.Duration
	GatewayURL     string // "": kernels run locally
	GatewayToken   string

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
	{"python", "PYTHON_MCP_INTERPRETER", "$CONDA_PREFIX's python, else the python3 kernelspec, else python3 on PATH", "Python interpreter whose ipykernel runs the code"},
	{"kernel", "KERNEL_MCP_KERNEL", "none", "kernelspec name to use instead of an interpreter"},
	{"token", "KERNEL_MCP_TOKEN", "none", "HTTP bearer token clients must send as 'Authorization: Bearer <token>'"},
	{"timeout", "KERNEL_MCP_TIMEOUT", "0", "default execution timeout in seconds (fractions allowed); 0 means none"},
	{"max-wait", "KERNEL_MCP_MAX_WAIT", "45", "seconds a call may hold its client: a run still going then is handed off with its run_id (wait_run gives the rest); keep it under the client's own request timeout"},
	{"client-idle-timeout", "KERNEL_MCP_CLIENT_IDLE_TIMEOUT", "1800", "seconds an HTTP client's MCP session may send nothing before the server forgets it (its kernel sessions and runs stay); 0 means never"},
	{"output-limit", "KERNEL_MCP_OUTPUT_LIMIT", "20000", "characters of output per result; longer output is cut in the middle"},
	{"state-dir", "KERNEL_MCP_STATE_DIR", "", "directory where session histories are kept; 'none' keeps them in memory only"},
	{"log-level", "KERNEL_MCP_LOG_LEVEL", "info", "log level on stderr: debug, info, warn or error"},
	{"memory-limit", "KERNEL_MCP_MEMORY_LIMIT", "0", "address-space limit (RLIMIT_AS) of each kernel in bytes, with an optional K, M or G suffix (2G, 512M); 0 means none; Linux only"},
	{"max-sessions", "KERNEL_MCP_MAX_SESSIONS", "0", "most sessions with a running kernel at once; 0 means unlimited"},
	{"pool-size", "KERNEL_MCP_POOL_SIZE", "1", "started, idle kernels kept ready per kind of kernel, so a new session or a reset takes milliseconds; 0 turns the pool off"},
	{"max-inline-image", "KERNEL_MCP_MAX_INLINE_IMAGE", "1M", "largest image put inline in a result, in bytes after base64 encoding (K, M suffixes); a larger one is downscaled for the inline copy and kept whole as a session://{id}/outputs/{n} resource"},
	{"image-mode", "KERNEL_MCP_IMAGE_MODE", "inline", "inline: images come back in results (downscaled past --max-inline-image); link: only as resource links"},
	{"tools", "KERNEL_MCP_TOOLS", "all", toolsHelp()},
	{"idle-timeout", "KERNEL_MCP_IDLE_TIMEOUT", "0", "seconds a kernel may run nothing before it is shut down (history kept); 0 means never"},
	{"start-timeout", "KERNEL_MCP_START_TIMEOUT", "60", "seconds a kernel may take to start before it is given up"},
	{"interrupt-grace", "KERNEL_MCP_INTERRUPT_GRACE", "5", "seconds an interrupted kernel gets to stop before it is restarted"},
	// Remote kernels (issue 11).
	{"gateway-url", "KERNEL_MCP_GATEWAY_URL", "none", "run kernels on this Jupyter Server, Kernel Gateway or Enterprise Gateway (http:// or https:// base URL) instead of as local processes"},
	{"gateway-token", "KERNEL_MCP_GATEWAY_TOKEN", "none", "token for --gateway-url, sent as 'Authorization: token <token>'"},
	// issue 12: confinement.
	{"sandbox", "KERNEL_MCP_SANDBOX", "false", "run every kernel under bubblewrap: no network, own PID namespace, read-only filesystem but the session's cwd, home hidden; Linux only"},
	{"sandbox-allow", "KERNEL_MCP_SANDBOX_ALLOW", "none", "with --sandbox, an absolute path the kernels (and the tools) may read; repeat the flag, or separate paths with ':' in the variable"},
	{"sandbox-network", "KERNEL_MCP_SANDBOX_NETWORK", "false", "with --sandbox, keep the network (install_package needs it)"},
	{"tokens-file", "KERNEL_MCP_TOKENS_FILE", "none", "HTTP only: a file of 'name token' lines (mode 600), one per user; each user has their own sessions, history and state folder"},
	{"max-sessions-per-user", "KERNEL_MCP_MAX_SESSIONS_PER_USER", "0", "with --tokens-file, most running kernels per user; 0 means unlimited (--max-sessions then counts all users)"},
	{"ui", "KERNEL_MCP_UI", "none", "serve the live web view at host:port (port 0 picks a free one; a bare :port binds 127.0.0.1), behind a random token printed with its URL; with sse or streamable-http also under /ui/ on that listener"},
	{"ui-readonly", "KERNEL_MCP_UI_READONLY", "false", "the web view only watches: running cells from it is refused"},
}

// boolSettings are the settings that are switches: "--sandbox" alone means
// true, and the values are true/false, 1/0, yes/no, on/off.
var boolSettings = map[string]bool{"sandbox": true, "sandbox-network": true, "ui-readonly": true}

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

// parseSwitch reads a switch's value; "" is false.
func parseSwitch(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, invalid(name, v, "want true or false")
}

// maxPoolSize bounds --pool-size: each warm kernel is a Python process of
// 50-100 MB sitting idle.
const maxPoolSize = 16

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
	cfg.Kernel = get("kernel")
	cfg.Token = get("token")

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
		if cfg.Python != "" {
			return config{}, invalid("python", cfg.Python, "cannot be used with --gateway-url: the gateway's kernelspecs decide the interpreter (pick one with --kernel)")
		}
		if cfg.MemoryLimit > 0 {
			return config{}, invalid("memory-limit", get("memory-limit"), "cannot be used with --gateway-url: a gateway's kernels get their limits from the gateway")
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
	if err := parseUI(&cfg, get); err != nil {
		return config{}, err
	}
	return cfg, nil
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

// absolutePaths makes the state directory and the tokens file absolute,
// against the directory the server starts in: they are handed to the
// sandbox, where a relative path would name something else (bwrap takes it
// against its new root), and the state directory is shown in logs.
func (c *config) absolutePaths() error {
	for _, p := range []struct {
		name string
		v    *string
	}{{"state-dir", &c.StateDir}, {"tokens-file", &c.TokensFile}} {
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

// parseUsers reads the multi-user settings (issue 12).
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
	case cfg.Token != "":
		return invalid("tokens-file", cfg.TokensFile, "give --token / KERNEL_MCP_TOKEN (one user) or a tokens file (several), not both")
	}
	return nil
}

// parseSandbox reads the confinement settings (issue 12).
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

// parseBytes parses a non-negative byte count with an optional binary
// suffix: K, M, G or T (also KB, KiB, ..., any case). 1K is 1024 bytes.
func parseBytes(v string) (int64, error) {
	bad := errors.New("want bytes with an optional K, M or G suffix, such as 2G or 512M (0 means none)")
	num := strings.TrimRight(v, "KMGTkmgtIiBb")
	suffix := strings.ToUpper(strings.TrimSpace(v[len(num):]))
	num = strings.TrimSpace(num)
	shift := 0
	switch strings.TrimSuffix(strings.TrimSuffix(suffix, "B"), "I") {
	case "":
		if suffix != "" && suffix != "B" {
			return 0, bad
		}
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	case "T":
		shift = 40
	default:
		return 0, bad
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errors.New("too large")
	case err != nil || n < 0:
		return 0, bad
	case n > math.MaxInt64>>shift:
		return 0, errors.New("too large")
	}
	return n << shift, nil
}

// parseSeconds parses a non-negative number of seconds, fractions allowed.
func parseSeconds(v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, errors.New("want a number of seconds, such as 30 or 2.5 (0 means none)")
	case f < 0:
		return 0, errors.New("must not be negative (0 means none)")
	case f*float64(time.Second) >= math.MaxInt64:
		return 0, errors.New("too large")
	}
	return time.Duration(f * float64(time.Second)), nil
}

// defaultStateDir is where histories are kept when --state-dir is not given:
// $XDG_STATE_HOME/kernel-mcp if set (and absolute), else the platform's
// per-user state or application-data directory. It returns "" when no home
// directory is known.
func defaultStateDir(goos string, getenv func(string) string) string {
	join := filepath.Join
	if goos == "windows" {
		// Build Windows paths even when tests run elsewhere.
		join = func(elem ...string) string { return strings.Join(elem, `\`) }
	}
	if x := getenv("XDG_STATE_HOME"); x != "" && isAbs(goos, x) {
		return join(x, "kernel-mcp")
	}
	switch goos {
	case "windows":
		if d := getenv("LocalAppData"); d != "" {
			return join(d, "kernel-mcp")
		}
		if d := getenv("USERPROFILE"); d != "" {
			return join(d, "AppData", "Local", "kernel-mcp")
		}
		return ""
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return join(h, "Library", "Application Support", "kernel-mcp")
		}
		return ""
	default:
		if h := getenv("HOME"); h != "" {
			return join(h, ".local", "state", "kernel-mcp")
		}
		return ""
	}
}

func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	// C:\dir, C:/dir or \\server\share.
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//")
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
