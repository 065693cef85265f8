package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/user"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Gateway says where kernels run when they are not child processes of this
// one: a Jupyter Server, Jupyter Kernel Gateway or Jupyter Enterprise
// Gateway, reached through its REST API (/api/kernels, /api/kernelspecs)
// and its kernel WebSocket (/api/kernels/{id}/channels).
//
// With Options.Gateway set, Start asks the server for a kernel instead of
// launching a process, and Interrupt, Restart and Close go through REST; the
// rest of the API is unchanged. The kernelspec is named by
// Options.Spec.Name (empty: the server's default), and Options.Env is
// passed in the start request.
type Gateway struct {
	// URL is the server's base URL, such as http://127.0.0.1:8888; a path
	// prefix (a base_url) is kept.
	URL string
	// Token is sent as "Authorization: token <Token>", the only form the
	// gateways accept. Empty sends none.
	Token string
	// HTTPClient, if set, carries every request and the WebSocket. Its
	// Timeout must be zero (each call has its own context). Nil uses a
	// client of this package that sets TCP_QUICKACK on Linux.
	HTTPClient *http.Client
	// ReconnectWindow is how long a dropped WebSocket is redialled (with
	// the same session_id, so the server replays what it buffered) before
	// the kernel counts as lost. Default 10 s.
	ReconnectWindow time.Duration

	// TokenNow, if set, gives the token for each request and each
	// redial instead of Token: one that changes while a kernel is open (a
	// hub token renewed by a new sign-in) reaches the kernel's reconnects.
	TokenNow func() string
	// JupyterServer says the server is a Jupyter Server (a JupyterHub
	// user's server), not a kernel gateway: start requests carry no env,
	// which it would ignore, so none of this machine's KERNEL_* variables
	// or its user name reach a server that is somebody else's; and they
	// ask for the kernel to start at the server's root.
	JupyterServer bool
	// Stopped, if set, is asked after a redial of a dropped WebSocket
	// fails: a non-empty answer (why the server no longer runs) ends the
	// reconnect window at once, the kernel lost for that reason. A hub
	// user's server that was stopped does not come back with its kernels.
	Stopped func(ctx context.Context) string

	// legacyFraming keeps the v1 subprotocol from being offered, so tests
	// can drive the legacy JSON framing against servers that offer v1.
	legacyFraming bool
}

// GatewayKernel is what a gateway reports about one of its kernels
// (GET /api/kernels/{id}).
type GatewayKernel struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	LastActivity   string `json:"last_activity"`
	ExecutionState string `json:"execution_state"`
	Connections    int    `json:"connections"`
}

// GatewaySpec is one kernelspec a gateway offers.
type GatewaySpec struct {
	Name        string
	DisplayName string
	Language    string
}

// maxGatewayEnvValue is the longest env value Enterprise Gateway accepts.
const maxGatewayEnvValue = 4096

// gatewayClient talks REST to one server.
type gatewayClient struct {
	base   *url.URL // without a trailing slash
	token  string
	hc     *http.Client
	window time.Duration
	ownHC  bool // hc is ours, so its idle connections are ours to close
	legacy bool // offer no subprotocol (Gateway.legacyFraming)
	noEnv  bool // Gateway.JupyterServer
	// tokenNow is Gateway.TokenNow.
	tokenNow func() string
	// stopped is Gateway.Stopped.
	stopped func(ctx context.Context) string
}

func (g *Gateway) client() (*gatewayClient, error) {
	u, err := url.Parse(strings.TrimRight(g.URL, "/"))
	if err != nil {
		// url.Parse quotes the whole URL, password and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("kernel: the gateway URL is not a valid URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("kernel: gateway URL %q must be http:// or https:// with a host", u.Redacted())
	}
	hc, own := g.HTTPClient, false
	if hc == nil {
		hc, own = &http.Client{Transport: quickACKTransport()}, true
	}
	w := g.ReconnectWindow
	if w <= 0 {
		w = 10 * time.Second
	}
	return &gatewayClient{base: u, token: g.Token, hc: hc, window: w, ownHC: own, legacy: g.legacyFraming, noEnv: g.JupyterServer, stopped: g.Stopped, tokenNow: g.TokenNow}, nil
}

// quickACKTransport is http.DefaultTransport's settings with a dialer whose
// connections set TCP_QUICKACK before every read (see quickACK).
func quickACKTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			return quickACKConn{tc}, nil
		}
		return c, nil
	}
	return t
}

// quickACKConn is a TCP connection that asks for immediate ACKs before
// each read.
type quickACKConn struct{ *net.TCPConn }

func (c quickACKConn) Read(p []byte) (int, error) {
	quickACK(c.TCPConn)
	return c.TCPConn.Read(p)
}

// wrapped is an error with a message of its own that still matches the
// error it explains with errors.Is and errors.As.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// errNoSuchKernel is wrapped when the server answers 404 for a kernel id.
var errNoSuchKernel = errors.New("no such kernel")

// GatewayError is an HTTP error answer of a gateway.
type GatewayError struct {
	URL    string // the server's base URL
	Method string
	Path   string
	Status int
	Body   string // the start of the answer's body
}

func (e *GatewayError) Error() string {
	msg := fmt.Sprintf("kernel: gateway %s: %s %s: %d %s", e.URL, e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Status == http.StatusUnauthorized {
		msg = fmt.Sprintf("kernel: gateway %s refused the token (%d %s on %s %s); check the gateway token",
			e.URL, e.Status, http.StatusText(e.Status), e.Method, e.Path)
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// reason pulls a readable message out of an error body: the "reason" or
// "message" of the JSON the Jupyter servers send, else the text itself.
func reason(body []byte) string {
	var j struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	s := ""
	if json.Unmarshal(body, &j) == nil {
		s = strings.TrimSpace(j.Message)
		if s == "" {
			s = strings.TrimSpace(j.Reason)
		}
	}
	if s == "" {
		s = strings.TrimSpace(string(body))
		if strings.HasPrefix(s, "<") { // an HTML error page says nothing useful
			s = ""
		}
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// String is the server's base URL as shown in errors and reports: with
// any password in it replaced by "xxxxx" (url.URL.Redacted).
func (c *gatewayClient) String() string { return c.base.Redacted() }

// redact rewrites err so its text holds no password of the base URL, for
// errors that quote a URL themselves (net/http's *url.Error, a WebSocket
// library's messages). The result still matches err with errors.Is/As.
func (c *gatewayClient) redact(err error) error {
	if err == nil {
		return nil
	}
	pw, ok := c.base.User.Password()
	if !ok || pw == "" {
		return err
	}
	msg := err.Error()
	clean := strings.ReplaceAll(msg, c.base.User.String()+"@", c.base.User.Username()+":xxxxx@")
	clean = strings.ReplaceAll(clean, c.base.User.Username()+":"+pw+"@", c.base.User.Username()+":xxxxx@")
	if len(pw) >= 4 { // a shorter one would mangle ordinary words
		clean = strings.ReplaceAll(clean, url.PathEscape(pw), "xxxxx")
		clean = strings.ReplaceAll(clean, pw, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return &wrapped{msg: clean, err: err}
}

// release closes the idle connections of a client this package made, so
// no connection goroutine outlives the kernel. A nil client is fine.
func (c *gatewayClient) release() {
	if c != nil && c.ownHC {
		c.hc.CloseIdleConnections()
	}
}

func (c *gatewayClient) header() http.Header {
	h := http.Header{}
	tok := c.token
	if c.tokenNow != nil {
		tok = c.tokenNow()
	}
	if tok != "" {
		h.Set("Authorization", "token "+tok)
	}
	return h
}

// do sends one REST request. Any status outside want is a *GatewayError; a
// server that cannot be reached is an error naming its URL.
func (c *gatewayClient) do(ctx context.Context, method, path string, body, out any, want ...int) (err error) {
	defer func() { err = c.redact(err) }()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header = c.header()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("kernel: gateway %s did not answer %s %s: %w", c, method, path, ctx.Err())
		}
		return fmt.Errorf("kernel: gateway %s is unreachable: %w", c, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("kernel: gateway %s: reading the answer to %s %s: %w", c, method, path, err)
	}
	if !slices.Contains(want, resp.StatusCode) {
		ge := &GatewayError{URL: c.String(), Method: method, Path: path, Status: resp.StatusCode, Body: reason(data)}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w: %w", errNoSuchKernel, ge)
		}
		return ge
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("kernel: gateway %s: decoding the answer to %s %s: %w", c, method, path, err)
		}
	}
	return nil
}

func kernelPath(id string) string { return "/api/kernels/" + url.PathEscape(id) }

// noKernel rewrites a 404 for kernel id into a sentence.
func (c *gatewayClient) noKernel(id string, err error) error {
	if errors.Is(err, errNoSuchKernel) {
		return fmt.Errorf("kernel: gateway %s has no kernel with id %q (%w)", c, id, errNoSuchKernel)
	}
	return err
}

// startKernel asks for a kernel of the named kernelspec (empty: the
// server's default). Servers answer an unknown name with 500, so a failure
// is checked against the kernelspecs the server offers.
func (c *gatewayClient) startKernel(ctx context.Context, name string, env map[string]string) (GatewayKernel, error) {
	body := map[string]any{}
	if c.noEnv {
		// A Jupyter Server starts a kernel given a path in that folder
		// of its root ("": the root itself), and one given none in the
		// server process's own folder, which is not its root when the
		// spawner set one (notebook_dir).
		body["path"] = ""
	} else {
		body["env"] = env
	}
	if name != "" {
		body["name"] = name
	}
	var m GatewayKernel
	err := c.do(ctx, http.MethodPost, "/api/kernels", body, &m, http.StatusCreated, http.StatusOK)
	if err == nil {
		if m.ID == "" {
			return m, fmt.Errorf("kernel: gateway %s started a kernel but sent no id", c)
		}
		return m, nil
	}
	var ge *GatewayError
	if !errors.As(err, &ge) || ge.Status == http.StatusUnauthorized {
		return m, err // unreachable, or the token: nothing to add
	}
	if name != "" {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		specs, _, serr := c.kernelSpecs(sctx)
		cancel()
		if serr == nil && !slices.ContainsFunc(specs, func(s GatewaySpec) bool { return s.Name == name }) {
			names := make([]string, len(specs))
			for i, s := range specs {
				names[i] = s.Name
			}
			return m, fmt.Errorf("kernel: gateway %s has no kernelspec %q; it offers: %s", c, name, strings.Join(names, ", "))
		}
	}
	spec := "its default kernelspec"
	if name != "" {
		spec = fmt.Sprintf("kernelspec %q", name)
	}
	msg := fmt.Sprintf("kernel: gateway %s could not start a kernel of %s: %d %s", c, spec, ge.Status, http.StatusText(ge.Status))
	if ge.Body != "" {
		msg += ": " + ge.Body
	}
	return m, &wrapped{msg: msg, err: ge}
}

func (c *gatewayClient) kernel(ctx context.Context, id string) (GatewayKernel, error) {
	var m GatewayKernel
	err := c.do(ctx, http.MethodGet, kernelPath(id), nil, &m, http.StatusOK)
	return m, c.noKernel(id, err)
}

func (c *gatewayClient) interrupt(ctx context.Context, id string) error {
	return c.noKernel(id, c.do(ctx, http.MethodPost, kernelPath(id)+"/interrupt", nil, nil, http.StatusNoContent, http.StatusOK))
}

func (c *gatewayClient) restart(ctx context.Context, id string) error {
	return c.noKernel(id, retryWhileRestarting(ctx, func() error {
		return c.do(ctx, http.MethodPost, kernelPath(id)+"/restart", nil, nil, http.StatusOK, http.StatusNoContent)
	}))
}

// deleteKernel shuts a kernel down; one that is already gone is no error.
func (c *gatewayClient) deleteKernel(ctx context.Context, id string) error {
	err := retryWhileRestarting(ctx, func() error {
		return c.do(ctx, http.MethodDelete, kernelPath(id), nil, nil, http.StatusNoContent, http.StatusOK)
	})
	if errors.Is(err, errNoSuchKernel) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kernel: gateway %s: kernel %s may still run: %w", c, id, err)
	}
	return nil
}

// retryWhileRestarting retries a request the server answered with 500
// until ctx ends. jupyter_server answers 500 to a DELETE or restart that
// comes while it is itself restarting a kernel that died (its "ready"
// future is unset then); it succeeds a moment later.
func retryWhileRestarting(ctx context.Context, req func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := req()
		var ge *GatewayError
		if err == nil || !errors.As(err, &ge) || ge.Status != http.StatusInternalServerError {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (c *gatewayClient) kernelSpecs(ctx context.Context) ([]GatewaySpec, string, error) {
	var r struct {
		Default     string `json:"default"`
		Kernelspecs map[string]struct {
			Name string `json:"name"`
			Spec struct {
				DisplayName string `json:"display_name"`
				Language    string `json:"language"`
			} `json:"spec"`
		} `json:"kernelspecs"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/kernelspecs", nil, &r, http.StatusOK); err != nil {
		return nil, "", err
	}
	specs := make([]GatewaySpec, 0, len(r.Kernelspecs))
	for name, s := range r.Kernelspecs {
		specs = append(specs, GatewaySpec{Name: name, DisplayName: s.Spec.DisplayName, Language: s.Spec.Language})
	}
	slices.SortFunc(specs, func(a, b GatewaySpec) int { return strings.Compare(a.Name, b.Name) })
	return specs, r.Default, nil
}

// KernelSpecs lists the kernelspecs the gateway offers, sorted by name,
// and the name of its default.
func (g Gateway) KernelSpecs(ctx context.Context) (specs []GatewaySpec, defaultName string, err error) {
	c, err := g.client()
	if err != nil {
		return nil, "", err
	}
	defer c.release()
	return c.kernelSpecs(ctx)
}

// dialChannels opens the kernel's WebSocket. The server completes the
// handshake only once the kernel answered kernel_info, so this also waits
// for a starting kernel.
func (c *gatewayClient) dialChannels(ctx context.Context, id, session string, limit int64) (_ *websocket.Conn, _ bool, err error) {
	defer func() { err = c.redact(err) }()
	u := *c.base
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.Path += kernelPath(id) + "/channels"
	u.RawPath = ""
	u.RawQuery = url.Values{"session_id": {session}}.Encode()
	protos := []string{wsSubprotocolV1}
	if c.legacy {
		protos = nil
	}
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient:      c.hc,
		HTTPHeader:      c.header(),
		Subprotocols:    protos,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			ge := &GatewayError{URL: c.String(), Method: http.MethodGet, Path: kernelPath(id) + "/channels", Status: resp.StatusCode}
			if resp.StatusCode == http.StatusNotFound {
				return nil, false, c.noKernel(id, fmt.Errorf("%w: %w", errNoSuchKernel, ge))
			}
			return nil, false, ge
		}
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("kernel: gateway %s: the kernel WebSocket did not open: %w", c, ctx.Err())
		}
		if oe := (*net.OpError)(nil); errors.As(err, &oe) {
			return nil, false, fmt.Errorf("kernel: gateway %s is unreachable: %w", c, oe)
		}
		return nil, false, fmt.Errorf("kernel: gateway %s: opening the kernel WebSocket: %w", c, err)
	}
	// Outputs, images and replayed buffers come as single frames far above
	// the library's 32 KiB default. The bound is the kernel's message
	// limit: the library reads a message as it comes, never allocating
	// what a frame announces, and stops past the limit with
	// ErrMessageTooBig.
	ws.SetReadLimit(limit)
	return ws, ws.Subprotocol() == wsSubprotocolV1, nil
}

// gatewayEnv is the env sent with a start request: opts' env plus
// KERNEL_USERNAME, which Enterprise Gateway requires (it refuses a kernel
// for root without it) and uses to pick whom a kernel runs as.
func gatewayEnv(env map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range env {
		if utf8.RuneCountInString(v) > maxGatewayEnvValue {
			return nil, fmt.Errorf("kernel: env %s is %d characters; gateways accept at most %d", k, utf8.RuneCountInString(v), maxGatewayEnvValue)
		}
		out[k] = v
	}
	if out["KERNEL_USERNAME"] == "" {
		// Enterprise Gateway refuses "root" by default
		// (unauthorized_users), and a server run as root locally
		// is the common test set-up: root goes by the program's name.
		name := "kernel-mcp"
		if u, err := user.Current(); err == nil && u.Username != "" && u.Username != "root" {
			name = u.Username
		}
		out["KERNEL_USERNAME"] = name
	}
	return out, nil
}
