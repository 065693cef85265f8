package kernel

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// fakeGateway serves one kernel, "k1", well enough for a readiness wait:
// kernel_info_request gets a reply on shell and an idle status on iopub.
// The WebSockets opened while poison > 0 instead see a shutdown_reply
// asking for a restart, as when the server's own restarter (or another
// client) restarts the kernel just after this client's restart did.
type fakeGateway struct {
	mu      sync.Mutex
	poison  int
	dials   int
	deletes int
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/kernels/k1" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"k1","name":"python3","execution_state":"idle","connections":1}`))
	case r.URL.Path == "/api/kernels" && r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"k1","name":"python3"}`))
	case r.URL.Path == "/api/kernels/k1" && r.Method == http.MethodDelete:
		f.mu.Lock()
		f.deletes++
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/api/kernels/k1/restart" && r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"k1","name":"python3"}`))
	case r.URL.Path == "/api/kernels/k1/channels":
		f.mu.Lock()
		f.dials++
		poisoned := f.poison > 0
		if poisoned {
			f.poison--
		}
		f.mu.Unlock()
		f.serveChannels(w, r, poisoned)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGateway) serveChannels(w http.ResponseWriter, r *http.Request, poisoned bool) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ctx := r.Context()
	send := func(ch Channel, req *wire.Message, typ string, content any) error {
		m, err := wire.NewMessage(typ, "fake-server", content)
		if err != nil {
			return err
		}
		m.ParentHeader = req.Header
		frame, _, err := encodeWSLegacy(ch, m)
		if err != nil {
			return err
		}
		return ws.Write(ctx, websocket.MessageText, frame)
	}
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		ch, req, err := decodeWSLegacy(data, typ == websocket.MessageBinary)
		if err != nil || ch != Shell || req.Header.MsgType != "kernel_info_request" {
			continue
		}
		if poisoned {
			send(IOPub, &wire.Message{}, "shutdown_reply", map[string]any{"status": "ok", "restart": true})
			continue
		}
		send(IOPub, req, "status", map[string]string{"execution_state": "busy"})
		send(Shell, req, "kernel_info_reply", map[string]any{"status": "ok", "protocol_version": "5.3",
			"language_info": map[string]string{"name": "python"}})
		send(IOPub, req, "status", map[string]string{"execution_state": "idle"})
	}
}

// TestGatewayRestartRacingAnotherRestart: a restart that lands while this
// client waits for its own restarted kernel to answer leaves a fresh
// kernel under the same id, so Restart succeeds instead of reporting the
// kernel dead. (Seen in CI with Kernel Gateway, whose restarter restarted a
// kernel that had exited at the moment the test restarted it too.)
func TestGatewayRestartRacingAnotherRestart(t *testing.T) {
	f := &fakeGateway{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := AttachGateway(ctx, Gateway{URL: srv.URL}, "k1", Options{DetachOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	f.mu.Lock()
	f.poison = 1
	f.mu.Unlock()
	if err := k.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	f.mu.Lock()
	dials := f.dials
	f.mu.Unlock()
	if dials != 3 {
		t.Errorf("%d WebSockets opened, want 3 (attach, the restart cut short, its retry)", dials)
	}

	// A kernel that keeps being restarted under the client is reported,
	// not waited on for ever.
	f.mu.Lock()
	f.poison = 100
	f.mu.Unlock()
	err = k.Restart(ctx)
	if err == nil || !strings.Contains(err.Error(), "another client restarted it") {
		t.Fatalf("Restart under endless restarts: %v, want the restart named", err)
	}
}

// TestGatewayFailedRestartStillDeletes: a kernel this client started whose
// restart failed is still this client's, so Close deletes it on the server
// rather than leaving it running there untracked.
func TestGatewayFailedRestartStillDeletes(t *testing.T) {
	f := &fakeGateway{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := Start(ctx, Options{Gateway: &Gateway{URL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.poison = 100
	f.mu.Unlock()
	if err := k.Restart(ctx); err == nil {
		t.Fatal("Restart succeeded on a kernel that is always restarted under it")
	}
	if st := k.State(); st != "dead" {
		t.Errorf("State() after a failed restart = %q, want dead", st)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deletes != 1 {
		t.Errorf("%d DELETEs after Close, want 1", f.deletes)
	}
}
