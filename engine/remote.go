package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Remote kernels: sessions whose kernel runs on a Jupyter server
// (Config.GatewayURL), and sessions attached to a kernel someone else runs,
// by gateway kernel id or local connection file. Everything else in this
// package drives them like any kernel; only the start, the reset guard and
// the reports below know the difference.

// attached reports whether the choice attaches to an existing kernel.
// Such kernels are shared: the pool never holds them, and the session only
// detaches from them.
func (c Choice) Attached() bool { return c.KernelID != "" || c.ConnectionFile != "" }

// gateway is the server's gateway, or nil when kernels run locally.
func (s *Engine) Gateway() *kernel.Gateway {
	if s.cfg.GatewayURL == "" {
		return nil
	}
	if us := s.cfg.UserServer; us != nil {
		// A token that is missing now fails the start first, clearly
		// (startUserServer); a listing goes through it too.
		tok, _ := us.Token()
		return &kernel.Gateway{URL: s.cfg.GatewayURL, Token: tok, JupyterServer: true, Stopped: userServerStopped(us),
			// A new sign-in renews the token while kernels are open.
			TokenNow: func() string {
				if t, err := us.Token(); err == nil {
					return t
				}
				return tok
			}}
	}
	return &kernel.Gateway{URL: s.cfg.GatewayURL, Token: s.cfg.GatewayToken}
}

// GatewayShown is the gateway's URL as the server shows it, in results,
// errors and logs: a password in it is replaced by "xxxxx"
// (url.URL.Redacted), since whatever a result says reaches the model.
func (s *Engine) GatewayShown() string { return redactURL(s.cfg.GatewayURL) }

// redactURL is raw with its password hidden; a URL that does not parse is
// not shown at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// checkGatewayConfig refuses settings that only mean something for local
// kernels: on a gateway the server picks the interpreter and the limits.
func (c *Config) checkGatewayConfig() error {
	if c.GatewayURL == "" {
		return nil
	}
	// The URL is shown in results and errors, which reach the model: a
	// token pasted into its query (as Jupyter prints it) would be too.
	if u, err := url.Parse(c.GatewayURL); err == nil && (u.RawQuery != "" || u.ForceQuery || u.Fragment != "") {
		u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
		return fmt.Errorf("the gateway URL %s?… has a query string or fragment: give the base URL alone, and the token as --gateway-token (GatewayToken), which is sent as a header and never shown", u.Redacted())
	}
	if c.Python != "" {
		return fmt.Errorf("--python (%s) cannot be used with --gateway-url: the gateway's kernelspecs decide the interpreter; use --kernel to pick one of them", c.Python)
	}
	if c.MemoryLimit > 0 {
		return errors.New("--memory-limit cannot be used with --gateway-url: limits of a gateway's kernels are the gateway's to set (e.g. Kubernetes resource limits in Enterprise Gateway's kernelspecs)")
	}
	if c.WorkDir != "" {
		return fmt.Errorf("--workdir (%s) cannot be used with --gateway-url: a gateway's kernels work in the gateway's folders", c.WorkDir)
	}
	return nil
}

// checkChoice validates create_session's remote parameters.
func (s *Engine) checkChoice(c Choice) error {
	switch {
	case c.KernelID != "" && c.ConnectionFile != "":
		return errors.New("give kernel_id or connection_file, not both")
	case c.Attached() && (c.Kernel != "" || c.Python != "" || c.Cwd != ""):
		return errors.New("kernel_id and connection_file attach to a running kernel: kernel, python and cwd cannot be given with them")
	case c.KernelID != "" && s.cfg.GatewayURL == "":
		return errors.New("kernel_id needs a gateway: start the server with --gateway-url (KERNEL_MCP_GATEWAY_URL)")
	case c.KernelID != "" && s.cfg.MultiUser:
		// Every user's kernels live on the one gateway: an id could name
		// another user's kernel, and attaching would hand over its namespace.
		return errors.New("kernel_id cannot be used on a server with several users (--tokens-file): the id could name another user's kernel on the gateway. Start a session of your own instead (create_session with kernel)")
	case s.cfg.GatewayURL != "" && c.Python != "":
		return fmt.Errorf("python cannot be used with the gateway %s: pick one of its kernelspecs with kernel (see list_kernels)", s.GatewayShown())
	case s.cfg.GatewayURL != "" && c.Cwd != "":
		return fmt.Errorf("cwd cannot be used with the gateway %s: the kernel's working directory is on the gateway's side", s.GatewayShown())
	case c.Python != "" && s.checkPython(c.Python) != nil:
		return s.checkPython(c.Python)
	case c.ConnectionFile != "":
		if err := s.connectionFileRefusal(); err != nil {
			return err
		}
		if !filepath.IsAbs(c.ConnectionFile) {
			return fmt.Errorf("connection_file %q must be an absolute path (jupyter --runtime-dir holds them)", c.ConnectionFile)
		}
		if _, err := os.Stat(c.ConnectionFile); err != nil {
			return fmt.Errorf("connection_file: %v", err)
		}
	}
	return nil
}

// connectionFileRefusal is why this server attaches to no kernel by
// connection file, or nil. Under the sandbox, code in the kernel can write
// a connection file naming any listener, and the server would dial it from
// the host's network and send it the session's code: egress past "no
// network". With several users, a path could name another user's kernel.
// Either way the answer is the same whatever the path names, so it says
// nothing of which files exist or what they hold.
func (s *Engine) connectionFileRefusal() error {
	switch {
	case s.cfg.Sandbox != nil:
		return errors.New("connection_file cannot be used under --sandbox: the server would connect, from outside the sandbox, to whatever address the file names, and code in the sandbox can write such a file. Start a session of the server's own instead (create_session with kernel, python or cwd)")
	case s.cfg.MultiUser:
		return errors.New("connection_file cannot be used on a server with several users (--tokens-file): the file could name another user's kernel. Start a session of your own instead (create_session with kernel, python or cwd)")
	}
	return nil
}

// remoteStart starts or attaches the kernel of a choice that is not a local
// process. ok is false for a local kernel, which coldStart starts itself.
func (s *Engine) remoteStart(ctx context.Context, c Choice) (k *kernel.Kernel, info KernelInfo, ok bool, err error) {
	opts := kernel.Options{
		StartTimeout:   s.cfg.StartTimeout,
		InterruptGrace: s.cfg.InterruptGrace,
		ShutdownWait:   time.Second,
		TermWait:       time.Second,
		MaxMessageSize: s.cfg.MaxMessageSize,
		// An attached kernel is shared: the session only ever detaches.
		DetachOnClose: true,
	}
	switch {
	case c.ConnectionFile != "":
		// A session restored from a run without these settings is held to
		// them too.
		if err := s.connectionFileRefusal(); err != nil {
			return nil, KernelInfo{}, true, err
		}
		k, err = kernel.Attach(ctx, c.ConnectionFile, opts)
	case c.KernelID != "":
		k, err = kernel.AttachGateway(ctx, *s.Gateway(), c.KernelID, opts)
	case s.cfg.GatewayURL != "":
		if err := s.startUserServer(ctx); err != nil {
			return nil, KernelInfo{}, true, err
		}
		opts.Gateway = s.Gateway()
		if s.cfg.UserServer == nil {
			opts.Env = gatewayKernelEnv(os.Environ())
		}
		opts.Spec.Name = c.Kernel
		if opts.Spec.Name == "" {
			opts.Spec.Name = s.cfg.Kernel
		}
		k, err = kernel.Start(ctx, opts)
		if us := s.cfg.UserServer; err != nil && us != nil && ctx.Err() == nil {
			// The hub may still call a server that ended ready (until its
			// spawner's poll); asking it starts the server again.
			if why, gerr := us.Gone(ctx); gerr == nil && why != "" {
				s.cfg.Logger.Info("the user's server was gone at a kernel start; starting it again", "server", us.URL(), "why", why, "start_error", err)
				if err = s.startUserServer(ctx); err == nil {
					opts.Gateway = s.Gateway()
					k, err = kernel.Start(ctx, opts)
				}
			}
		}
	default:
		return nil, KernelInfo{}, false, nil
	}
	if err != nil {
		return nil, KernelInfo{}, true, err
	}
	info = KernelInfo{KernelName: k.Spec().Name}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ki, err := k.KernelInfo(ictx); err == nil {
		info.Language = ki.LanguageInfo.Name
		info.Version = ki.LanguageInfo.Version
	}
	return k, info, true, nil
}

// sharedKernelRefusal is the answer to a reset of an attached session
// without force, or nil when the reset may go ahead.
func (ss *Session) SharedKernelRefusal(force bool) error {
	switch {
	case ss.choice.ConnectionFile != "":
		return fmt.Errorf("session %q is attached to the kernel of connection file %s, which belongs to whoever started it: it cannot be restarted from here (delete_session detaches; restart it where it was started)", ss.id, ss.choice.ConnectionFile)
	case ss.choice.KernelID != "" && !force:
		return fmt.Errorf("session %q is attached to the shared kernel %s on %s (perhaps a notebook's): a restart clears its namespace for every client using it. Ask the user first, then call again with force: true", ss.id, ss.choice.KernelID, ss.eng.GatewayShown())
	}
	return nil
}

// GatewayInfo is what session_status reports of a kernel on a gateway: the
// gateway's own view.
type GatewayInfo struct {
	URL            string `json:"url"`
	KernelID       string `json:"kernel_id"`
	ExecutionState string `json:"execution_state,omitempty"`
	LastActivity   string `json:"last_activity,omitempty"`
	Connections    int    `json:"connections"`
	Attached       bool   `json:"attached"`
	Error          string `json:"error,omitempty"`
}

// pipViaMagic reports whether install_package should run %pip in the
// kernel: a kernel on a gateway has its interpreter on another machine,
// and %pip is what a notebook user there would type.
func pipViaMagic(k *kernel.Kernel) bool { return k.GatewayKernelID() != "" }

// pipMagic is the cell install_package runs on a gateway kernel; IPython
// leaves pip's exit code in _exit_code.
func pipMagic(requirement string) string {
	return "%pip install --disable-pip-version-check --no-input " + requirement
}

// gatewayKernelEnv picks the KERNEL_* variables of the server's environment
// to send with a gateway start request, as jupyter_server's own gateway
// client does: KERNEL_USERNAME, KERNEL_NAMESPACE, KERNEL_IMAGE,
// KERNEL_LAUNCH_TIMEOUT and the like configure Enterprise Gateway's
// kernels. The server's own KERNEL_MCP_* settings (the gateway token among
// them) never leave it.
func gatewayKernelEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, "KERNEL_") && !strings.HasPrefix(k, "KERNEL_MCP_") {
			env[k] = v
		}
	}
	return env
}
