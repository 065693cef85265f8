// Package hub is a client of JupyterHub's REST API for one user's
// single-user server: whether it runs, starting it, following the start's
// progress events, and the address at which the hub's proxy serves it, where
// it is a Jupyter Server that kernel.Gateway drives.
//
//	s := &hub.Server{API: "http://127.0.0.1:8081/hub/api", Public: "https://hub.example.org",
//		User: "alice", Token: func() (string, error) { return tok, nil }}
//	if err := s.Start(ctx, func(p hub.Progress) { log.Print(p) }); err != nil { ... }
//	g := kernel.Gateway{URL: s.URL(), Token: tok}
//
// The token needs, at the hub, read:servers (the server's model and its
// start's progress), start:servers (to start it) and access:servers (to
// reach it through the proxy) for this user's servers only: JupyterHub
// writes those as read:servers!user, start:servers!user and
// access:servers!user. It never stops a server, so it needs no
// delete:servers. Nothing here imports the rest of kernel-mcp.
package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// Limits on what the hub may send: a model or an error is small, and a
// progress event is one line of JSON.
const (
	maxAnswer = 1 << 20
	maxEvent  = 64 << 10
)

// Server is one user's server at a JupyterHub. Its methods may be called
// concurrently; a Start in progress is not shared between callers (the
// hub answers a second start of a pending server with 202, and both follow
// its progress).
type Server struct {
	// API is the hub's REST API as kernel-mcp reaches it, such as
	// http://127.0.0.1:8081/hub/api (JUPYTERHUB_API_URL).
	API string
	// Public is the hub's public URL, its proxy, which serves the user's
	// server at /user/<name>/[<server name>/].
	Public string
	// User is the hub user; Name the server's name, "" for the default one.
	User, Name string
	// Token returns the token to use now (it may change when the person
	// signs in again). Its error is returned as it is.
	Token func() (string, error)
	// HTTPClient carries the API requests; nil: one with no timeout of its
	// own (every request has a context).
	HTTPClient *http.Client
	// PollInterval is how often a server the hub is stopping is asked
	// about again; default 500 ms.
	PollInterval time.Duration

	checks singleflight.Group // Gone's
}

// URL is the server's base URL through the hub's proxy, with a trailing
// slash.
func (s *Server) URL() string {
	u := strings.TrimSuffix(s.Public, "/") + "/user/" + url.PathEscape(s.User) + "/"
	if s.Name != "" {
		u += url.PathEscape(s.Name) + "/"
	}
	return u
}

// Shown names the server in messages: "alice's server" or "alice's server
// "gpu"".
func (s *Server) Shown() string {
	if s.Name == "" {
		return fmt.Sprintf("%s's JupyterHub server", s.User)
	}
	return fmt.Sprintf("%s's JupyterHub server %q", s.User, s.Name)
}

// Model is the part of the hub's server model kernel-mcp uses.
type Model struct {
	Name    string `json:"name"`
	Ready   bool   `json:"ready"`
	Pending string `json:"pending"` // "spawn", "stop" or ""
	Stopped bool   `json:"stopped"`
	URL     string `json:"url"`
}

// Progress is one event of a server's start, as the hub reports it.
type Progress struct {
	Percent int    `json:"progress"`
	Message string `json:"message"`
	Ready   bool   `json:"ready"`
	Failed  bool   `json:"failed"`
}

// APIError is an error answer of the hub's API, with the hub's own message.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("JupyterHub %s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// SpawnError is a start the hub reports as failed; Message is the hub's
// ("Spawn failed: …").
type SpawnError struct {
	Server  string // Shown
	Message string
}

func (e *SpawnError) Error() string {
	return fmt.Sprintf("JupyterHub could not start %s: %s", e.Server, e.Message)
}

// ErrNoToken is wrapped by errors of a Server whose Token has none.
var ErrNoToken = errors.New("no JupyterHub token")

func (s *Server) serverPath() string {
	p := "/users/" + url.PathEscape(s.User)
	if s.Name == "" {
		return p + "/server"
	}
	return p + "/servers/" + url.PathEscape(s.Name)
}

func (s *Server) client() *http.Client {
	if s.HTTPClient != nil {
		return s.HTTPClient
	}
	return http.DefaultClient
}

// request sends one API request and returns the answer's status and body
// (at most maxAnswer bytes of it).
func (s *Server) request(ctx context.Context, method, path string, body any) (int, []byte, error) {
	tok, err := s.Token()
	if err != nil {
		return 0, nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(s.API, "/")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "token "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, nil, s.unreachable(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("JupyterHub at %s: reading the answer to %s %s: %w", s.API, method, path, err)
	}
	return resp.StatusCode, data, nil
}

func (s *Server) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("JupyterHub's API at %s is unreachable: %w", s.API, err)
}

// apiError makes an *APIError of an answer, with the hub's message (the
// "message" of its JSON), and says what a refusal means for this token.
func (s *Server) apiError(method, path string, status int, body []byte) error {
	e := &APIError{Method: method, Path: path, Status: status, Message: hubMessage(body)}
	switch status {
	case http.StatusForbidden, http.StatusUnauthorized:
		return fmt.Errorf("%w (the JupyterHub token kernel-mcp holds for %s must have the scopes read:servers!user, start:servers!user and access:servers!user: give kernel-mcp's hub service oauth_client_allowed_scopes with them, and have %s sign in again)", e, s.User, s.User)
	}
	return e
}

// hubMessage is the "message" of a JupyterHub error answer, else its text,
// cut at 300 characters; an HTML page says nothing and gives "".
func hubMessage(body []byte) string {
	var j struct {
		Message string `json:"message"`
	}
	m := ""
	if json.Unmarshal(body, &j) == nil {
		m = strings.TrimSpace(j.Message)
	}
	if m == "" {
		m = strings.TrimSpace(string(body))
		if strings.HasPrefix(m, "<") {
			m = ""
		}
	}
	if r := []rune(m); len(r) > 300 {
		m = string(r[:300]) + "…"
	}
	return m
}

// State asks the hub about the server. A server the user never had is
// stopped, not an error.
func (s *Server) State(ctx context.Context) (Model, error) {
	path := s.serverPath()
	status, body, err := s.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return Model{}, err
	}
	switch status {
	case http.StatusOK:
		var m Model
		if err := json.Unmarshal(body, &m); err != nil {
			return Model{}, fmt.Errorf("JupyterHub GET %s: decoding the server's model: %w", path, err)
		}
		return m, nil
	case http.StatusNotFound:
		return Model{Name: s.Name, Stopped: true}, nil
	}
	return Model{}, s.apiError(http.MethodGet, path, status, body)
}

// Start makes sure the server runs: it asks the hub to start a stopped
// one, waits for one being stopped to stop first, and follows the progress
// events of a start (its own or one under way) until the hub says the
// server is ready or the start failed (a *SpawnError with the hub's
// message). progress, if not nil, gets each event. ctx bounds it all: a
// start that ctx ends goes on at the hub.
func (s *Server) Start(ctx context.Context, progress func(Progress)) error {
	if progress == nil {
		progress = func(Progress) {}
	}
	poll := s.PollInterval
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	// Each turn either returns or meets a state that moved on (a stop that
	// ended, a start that ended without a verdict); a hub that keeps
	// moving is stopped by ctx.
	for {
		m, err := s.State(ctx)
		if err != nil {
			return err
		}
		switch {
		case m.Ready:
			return nil
		case m.Pending == "spawn":
			if done, err := s.follow(ctx, progress); done || err != nil {
				return err
			}
			if err := pause(ctx, poll, s.Shown()); err != nil {
				return err
			}
			continue
		case m.Pending != "":
			// A stop (the culler's, an admin's) must end before a start.
			progress(Progress{Message: fmt.Sprintf("waiting for JupyterHub to finish %s (pending: %s)", s.Shown(), m.Pending)})
			if err := pause(ctx, poll, s.Shown()); err != nil {
				return err
			}
			continue
		}
		progress(Progress{Message: fmt.Sprintf("asking JupyterHub to start %s", s.Shown())})
		path := s.serverPath()
		status, body, err := s.request(ctx, http.MethodPost, path, map[string]any{})
		if err != nil {
			return err
		}
		switch {
		case status == http.StatusCreated:
			progress(Progress{Percent: 100, Ready: true, Message: s.Shown() + " is ready"})
			return nil
		case status == http.StatusAccepted:
			if done, err := s.follow(ctx, progress); done || err != nil {
				return err
			}
		case status == http.StatusBadRequest && strings.Contains(hubMessage(body), "already running"):
			return nil
		case status == http.StatusBadRequest && strings.Contains(hubMessage(body), "is pending"):
			// Raced with a stop or a start: ask again in a moment.
			if err := pause(ctx, poll, s.Shown()); err != nil {
				return err
			}
		case status >= 500:
			// A start that fails within the hub's slow_spawn_timeout
			// fails the request itself; the hub's progress stream has the
			// spawner's own message.
			if m := s.failure(ctx); m != "" {
				return &SpawnError{Server: s.Shown(), Message: m}
			}
			return &SpawnError{Server: s.Shown(), Message: s.apiError(http.MethodPost, path, status, body).Error()}
		default:
			return s.apiError(http.MethodPost, path, status, body)
		}
	}
}

// Gone says why the server no longer runs, or "" while it does. The
// hub's model calls a server ready until its spawner's poll
// (Spawner.poll_interval, 30 s by default) notices a process that ended;
// a start request makes the hub poll it at once. So for a server the hub
// calls ready, Gone asks to start it: "already running" means it runs;
// anything else means the hub found it gone, and the start it was asked
// for is under way (which is what the person's next call would ask for).
// A server stopped or being stopped is not started.
//
// Checks at the same time share one answer: the hub reports a server it is
// polling for a start request as pending a start, so a second check
// during the first would take a live server for one that had stopped. A
// start already pending is no verdict either ("": asked again at the next
// drop; a server that did stop no longer has the kernel then).
func (s *Server) Gone(ctx context.Context) (string, error) {
	ch := s.checks.DoChan("gone", func() (any, error) {
		// The first caller's context must not cut the others' answer
		// short; each caller still stops waiting when its own ends.
		return s.gone(context.WithoutCancel(ctx))
	})
	select {
	case r := <-ch:
		why, _ := r.Val.(string)
		return why, r.Err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (s *Server) gone(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := s.State(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case m.Pending == "spawn":
		return "", nil
	case m.Pending != "" || !m.Ready:
		return "was stopped (by the hub's idle culler, an administrator, or from the hub's home page)", nil
	}
	path := s.serverPath()
	status, body, err := s.request(ctx, http.MethodPost, path, map[string]any{})
	if err != nil {
		return "", err
	}
	switch {
	case status == http.StatusBadRequest && strings.Contains(hubMessage(body), "already running"):
		return "", nil
	case status == http.StatusBadRequest && strings.Contains(hubMessage(body), "is pending"):
		return "", nil // a stop or start under way: asked again at the next drop
	case status == http.StatusCreated || status == http.StatusAccepted:
		return "ended (JupyterHub found its process gone) and is being started again", nil
	}
	return "", s.apiError(http.MethodPost, path, status, body)
}

// pause waits d, or fails when ctx ends first.
func pause(ctx context.Context, d time.Duration, shown string) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for JupyterHub to start or stop %s: %w", shown, ctx.Err())
	case <-t.C:
		return nil
	}
}

// failure is the message of a start that already failed, from the progress
// stream, or "".
func (s *Server) failure(ctx context.Context) string {
	var msg string
	_, err := s.follow(ctx, func(p Progress) {
		if p.Failed {
			msg = p.Message
		}
	})
	if se := (*SpawnError)(nil); errors.As(err, &se) {
		return se.Message
	}
	return msg
}

// follow reads the hub's progress events of a start. done is true when the
// hub said ready (err nil) or failed (a *SpawnError); false when the
// stream ended without either, or the server was not starting after all.
func (s *Server) follow(ctx context.Context, progress func(Progress)) (done bool, err error) {
	tok, err := s.Token()
	if err != nil {
		return false, err
	}
	path := s.serverPath() + "/progress"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.API, "/")+path, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "token "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("waiting for %s to start: %w", s.Shown(), ctx.Err())
		}
		return false, s.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		// "… is not starting": it became ready or stopped meanwhile.
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return false, s.apiError(http.MethodGet, path, resp.StatusCode, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxEvent)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // keep-alives, comments, the blank line after an event
		}
		var p Progress
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &p); err != nil {
			return false, fmt.Errorf("JupyterHub GET %s: an event that is not JSON: %w", path, err)
		}
		progress(p)
		switch {
		case p.Failed:
			return true, &SpawnError{Server: s.Shown(), Message: p.Message}
		case p.Ready:
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("waiting for %s to start: %w", s.Shown(), ctx.Err())
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return false, fmt.Errorf("JupyterHub GET %s: an event over %d bytes", path, maxEvent)
		}
		return false, fmt.Errorf("JupyterHub GET %s: reading the progress events: %w", path, err)
	}
	return false, nil
}
