package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real hub drives this package in integration/hubkernels_test.go;
// these scripted answers cover what a hub seldom sends.

func scripted(t *testing.T, h http.HandlerFunc) *Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &Server{API: ts.URL + "/hub/api", Public: "https://hub.example.org", User: "alice",
		Token: func() (string, error) { return "tok", nil }, HTTPClient: ts.Client()}
}

func TestURL(t *testing.T) {
	s := &Server{Public: "https://hub.example.org/", User: "a b"}
	if got := s.URL(); got != "https://hub.example.org/user/a%20b/" {
		t.Errorf("default server: %s", got)
	}
	s.Name = "gpu"
	if got := s.URL(); got != "https://hub.example.org/user/a%20b/gpu/" {
		t.Errorf("named server: %s", got)
	}
}

// A spawn that fails within the hub's slow_spawn_timeout fails the POST
// with 500; the spawner's own message is in the progress stream.
func TestStartFailureSaysTheHubsMessage(t *testing.T) {
	s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token tok" {
			t.Errorf("%s %s: Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/hub/api/users/alice/server":
			fmt.Fprint(w, `{"name": "", "ready": false, "pending": null, "stopped": true}`)
		case r.Method == http.MethodPost && r.URL.Path == "/hub/api/users/alice/server":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"status": 500, "message": "Unhandled error starting server alice"}`)
		case r.URL.Path == "/hub/api/users/alice/server/progress":
			fmt.Fprint(w, ":keepalive\n\ndata: {\"progress\": 100, \"failed\": true, \"message\": \"Spawn failed: no GPU left\"}\n\n")
		default:
			http.NotFound(w, r)
		}
	})
	var seen []string
	err := s.Start(context.Background(), func(p Progress) { seen = append(seen, p.Message) })
	var se *SpawnError
	if !errors.As(err, &se) || se.Message != "Spawn failed: no GPU left" {
		t.Fatalf("Start: %v", err)
	}
	if len(seen) == 0 || !strings.Contains(seen[0], "asking JupyterHub to start alice's JupyterHub server") {
		t.Errorf("progress: %q", seen)
	}
}

// A refusal names the scopes the token needs.
func TestRefusalNamesTheScopes(t *testing.T) {
	s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"status": 403, "message": "Action is not authorized with current scopes; requires any of [read:servers]"}`)
	})
	err := s.Start(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "requires any of [read:servers]") || !strings.Contains(err.Error(), "read:servers!user, start:servers!user and access:servers!user") {
		t.Fatalf("Start: %v", err)
	}
}

// An event line past the cap ends the wait with an error, not a buffer
// of whatever size the peer sends.
func TestProgressEventIsCapped(t *testing.T) {
	s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hub/api/users/alice/server":
			fmt.Fprint(w, `{"ready": false, "pending": "spawn"}`)
		case "/hub/api/users/alice/server/progress":
			fmt.Fprint(w, "data: "+strings.Repeat("x", 2*maxEvent)+"\n\n")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx, nil); err == nil || !strings.Contains(err.Error(), "an event over") {
		t.Fatalf("Start: %v", err)
	}
}

// A start that ctx ends says so, whatever the hub still does.
func TestStartObeysContext(t *testing.T) {
	s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hub/api/users/alice/server":
			fmt.Fprint(w, `{"ready": false, "pending": "spawn"}`)
		case "/hub/api/users/alice/server/progress":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"progress\": 10, \"message\": \"pulling\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Start(ctx, func(p Progress) {
		if p.Message == "pulling" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users", "alice", "hub-token.json")
	if _, err := LoadToken(path); !errors.Is(err, ErrNoToken) {
		t.Fatalf("no file: %v", err)
	}
	want := Token{AccessToken: "abc", Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), SavedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := SaveToken(path, want); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want %v", p, st.Mode().Perm(), err, mode)
		}
	}
	got, err := LoadToken(path)
	if err != nil || !got.Expiry.Equal(want.Expiry) || got.AccessToken != "abc" {
		t.Fatalf("LoadToken: %+v %v", got, err)
	}
	if !got.Expired(want.Expiry) || got.Expired(want.Expiry.Add(-time.Second)) {
		t.Error("Expired")
	}
	if err := os.WriteFile(path, []byte(strings.Repeat(" ", maxTokenFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadToken(path); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a huge file: %v", err)
	}
}

// Gone: a stopped server is not started; one the hub calls ready is
// asked to start, which makes the hub check its process: "already
// running" is a live server, a start accepted is one that had ended.
func TestGone(t *testing.T) {
	for _, c := range []struct {
		model      string
		postStatus int
		postBody   string
		want       string
		posted     bool
	}{
		{`{"ready": false, "pending": null}`, 0, "", "was stopped (by the hub's idle culler", false},
		{`{"ready": false, "pending": "stop"}`, 0, "", "was stopped", false},
		{`{"ready": false, "pending": "spawn"}`, 0, "", "", false},
		{`{"ready": true, "pending": null}`, 400, `{"status": 400, "message": "alice is already running"}`, "", true},
		{`{"ready": true, "pending": null}`, 400, `{"status": 400, "message": "alice is pending stop"}`, "", true},
		{`{"ready": true, "pending": null}`, 202, "", "ended (JupyterHub found its process gone)", true},
		{`{"ready": true, "pending": null}`, 201, "", "ended (JupyterHub found its process gone)", true},
	} {
		posted := false
		s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodGet:
				fmt.Fprint(w, c.model)
			case http.MethodPost:
				posted = true
				w.WriteHeader(c.postStatus)
				fmt.Fprint(w, c.postBody)
			}
		})
		why, err := s.Gone(context.Background())
		if err != nil || (c.want == "") != (why == "") || !strings.Contains(why, c.want) || posted != c.posted {
			t.Errorf("%s, POST %d %s: %q %v (posted %v)", c.model, c.postStatus, c.postBody, why, err, posted)
		}
	}
	// An answer it does not know is an error, not a verdict.
	s := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"ready": true}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"status": 403, "message": "Action is not authorized with current scopes"}`)
	})
	if why, err := s.Gone(context.Background()); err == nil || why != "" {
		t.Errorf("a refused check: %q %v", why, err)
	}
}
