// Command kernel-mcp is an MCP server that gives an AI assistant persistent
// Jupyter kernel sessions. It serves MCP over stdio (the default), SSE or
// streamable HTTP; run it with --help for its flags and environment
// variables.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
	"github.com/kernel-mcp/kernel-mcp/internal/httpguard"
	"github.com/kernel-mcp/kernel-mcp/internal/stdiotransport"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version string

// versionString is the version reported by --version and to MCP clients:
// the linker-set version, else the main module's version from the build
// info (set by go install module@version), else "dev".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the server failed
	exitUsage = 2 // bad flags, environment or an unsafe configuration
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
	go func() {
		<-ctx.Done()
		// A second signal now gets the default behaviour: exit at once.
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command; main only adds signals and the process. stdout
// is written only by --help and --version: over stdio it is the JSON-RPC
// stream, so logs go to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitUsage
	}
	if cfg.Help {
		usage(stdout, getenv)
		return exitOK
	}
	if cfg.Version {
		fmt.Fprintf(stdout, "kernel-mcp %s\n", versionString())
		return exitOK
	}
	// A build that reads its view files from disk (the Claude Desktop
	// bundle's) refuses to start without them, rather than serve blank views.
	if err := assets.Check(); err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitError
	}
	if cfg.TokenFile != "" {
		if cfg.Token, err = loadTokenFile(cfg.TokenFile); err != nil {
			fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
			return exitUsage
		}
	}
	if err := checkExposure(cfg); err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitUsage
	}
	if err := cfg.absolutePaths(); err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitUsage
	}
	if err := checkWorkDir(cfg); err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitUsage
	}
	if err := checkPython(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitUsage
	}
	var users []user
	if cfg.TokensFile != "" {
		if users, err = loadTokensFile(cfg.TokensFile); err != nil {
			fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
			return exitUsage
		}
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	watchStatsSignal(ctx, getenv, logger)
	if cfg.NoStateDir {
		logger.Warn("no home directory found: histories are kept in memory only; set --state-dir / KERNEL_MCP_STATE_DIR to keep them")
	}

	// Listen before starting anything else, so a busy port fails fast.
	var ln net.Listener
	if cfg.isHTTP() {
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(stderr, "kernel-mcp: cannot listen on %s (--host / MCP_HOST, --port / MCP_PORT): %v\n", addr, err)
			return exitError
		}
		defer ln.Close()
	}

	var ui *webView
	var uiURLs []string
	if cfg.UI != "" {
		if ui, err = listenUI(cfg, users); err != nil {
			fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
			return exitError
		}
		defer ui.ln.Close()
		uiURLs = ui.urls(ui.ln.Addr())
		if host, _, _ := net.SplitHostPort(cfg.UI); !httpguard.LoopbackHost(host) {
			logger.Warn("the web view listens beyond this machine: anyone with its URL can read and run code in the sessions", "ui", cfg.UI)
		}
	}

	sandbox, err := sandboxOptions(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitError
	}
	srv, err := newServers(users, cfg, mcpserver.Config{
		Sandbox:        sandbox,
		Python:         cfg.Python,
		Kernel:         cfg.Kernel,
		Timeout:        cfg.Timeout,
		MaxWait:        cfg.MaxWait,
		TaskWait:       cfg.TaskWait,
		TaskTTL:        cfg.TaskTTL,
		OutputLimit:    cfg.OutputLimit,
		InterruptGrace: cfg.InterruptGrace,
		StartTimeout:   cfg.StartTimeout,
		MemoryLimit:    cfg.MemoryLimit,
		MaxMessageSize: cfg.MaxMessageSize,
		ChartBrowser:   cfg.Browser,
		ChartTimeout:   cfg.ChartTimeout,
		MaxSessions:    cfg.MaxSessions,
		PoolSize:       cfg.PoolSize,
		MaxInlineImage: int(cfg.MaxInlineImage),
		ImageLinkOnly:  cfg.ImageMode == "link",
		Tools:          cfg.Tools,
		IdleTimeout:    cfg.IdleTimeout,
		StateDir:       cfg.StateDir,
		WorkDir:        cfg.WorkDir,
		GatewayURL:     cfg.GatewayURL,
		GatewayToken:   cfg.GatewayToken,
		Version:        versionString(),
		Logger:         logger,
	}, uiURLs)
	if err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitError
	}
	if cfg.OAuth != nil {
		if srv.oauth, err = startOAuth(ctx, cfg, srv.base, ln.Addr(), getenv, stderr, logger); err != nil {
			fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
			return exitError
		}
	}
	logger.Info("kernel-mcp starting", "version", versionString(), "transport", cfg.Transport,
		"state_dir", cfg.StateDir, "workdir", cfg.WorkDir, "output_limit", cfg.OutputLimit, "timeout", cfg.Timeout, "max_wait", cfg.MaxWait,
		"memory_limit", cfg.MemoryLimit, "max_sessions", cfg.MaxSessions, "pool_size", cfg.PoolSize, "idle_timeout", cfg.IdleTimeout,
		"start_timeout", cfg.StartTimeout, "interrupt_grace", cfg.InterruptGrace)

	// On a signal, shut the kernels down at once: a run in progress then
	// ends (its kernel is gone) instead of keeping the transport waiting
	// for its handler.
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			srv.Close()
		case <-stopped:
		}
	}()

	if ui != nil {
		ui.start(cfg, srv, logger)
		ui.announce(stderr, ui.ln.Addr(), "")
		// The view's listener lives as long as the MCP transport.
		uiCtx, uiStop := context.WithCancel(ctx)
		uiDone := make(chan error, 1)
		go func() { uiDone <- serveHTTP(uiCtx, ui.ln, ui.handler(), shutdownGrace, logger) }()
		defer func() {
			uiStop()
			if err := <-uiDone; err != nil {
				logger.Warn("web view", "error", err)
			}
		}()
	}

	if cfg.isHTTP() {
		err = serveHTTPTransport(ctx, cfg, srv, ui, ln, stderr, logger)
	} else {
		err = serveStdio(ctx, srv.list[0], stdiotransport.Stdio(), logger)
	}
	if cerr := srv.Close(); cerr != nil {
		logger.Warn("shutting kernels down", "error", cerr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kernel-mcp: %v\n", err)
		return exitError
	}
	logger.Info("kernel-mcp stopped")
	return exitOK
}

// serveStdio serves MCP over t until the client closes the stream (stdin
// EOF) or ctx is cancelled (a signal); both are a clean end. The caller
// closes srv, which shuts the kernels down.
func serveStdio(ctx context.Context, srv *mcpserver.Server, t mcp.Transport, logger *slog.Logger) error {
	err := srv.MCP().Run(ctx, srv.OrderedTransport(t))
	switch {
	case ctx.Err() != nil:
		logger.Info("signal received, shutting down")
		return nil
	case err == nil, errors.Is(err, io.EOF):
		logger.Info("client closed the connection, shutting down")
		return nil
	}
	return fmt.Errorf("stdio transport: %w", err)
}

// serveHTTPTransport serves MCP over SSE or streamable HTTP on ln until ctx
// is cancelled, then shuts the HTTP server down gracefully.
// With the web view (ui), it is served under /ui/ on ln too.
func serveHTTPTransport(ctx context.Context, cfg config, srv *servers, ui *webView, ln net.Listener, stderr io.Writer, logger *slog.Logger) error {
	h := withUI(ui, srv.httpHandler(cfg, logger))
	url := endpointURL(cfg.Transport, ln.Addr())
	// Always shown, whatever the log level: clients need the URL, and with
	// --port 0 this is where the chosen port appears.
	fmt.Fprintf(stderr, "kernel-mcp: serving %s at %s\n", cfg.Transport, url)
	if ui != nil {
		ui.announce(stderr, ln.Addr(), "also ")
	}
	if cfg.Token == "" && cfg.TokensFile == "" && cfg.OAuth == nil {
		logger.Info("no token set: any local process can connect; set KERNEL_MCP_TOKEN or --token-file / KERNEL_MCP_TOKEN_FILE to require one")
	}
	return serveHTTP(ctx, ln, h, shutdownGrace, logger)
}
