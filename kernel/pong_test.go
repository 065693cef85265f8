package kernel

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestPongFrame checks the linkname in pong.go against the coder/websocket
// in go.mod: the server must see one empty pong and nothing else.
func TestPongFrame(t *testing.T) {
	pongs := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			OnPongReceived: func(_ context.Context, p []byte) { pongs <- append([]byte(nil), p...) },
		})
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, b, err := c.Read(r.Context())
		if err == nil {
			c.Write(r.Context(), typ, b)
		}
		c.Read(r.Context())
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := sendPong(ctx, ws); err != nil {
		t.Fatal(err)
	}
	// A message after the pong still arrives whole: the frames did not mix.
	if err := ws.Write(ctx, websocket.MessageText, []byte("after")); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil || string(b) != "after" {
		t.Fatalf("echo after the pong: %q %v", b, err)
	}
	select {
	case p := <-pongs:
		if len(p) != 0 {
			t.Fatalf("pong payload %q, want empty", p)
		}
	default:
		t.Fatal("the server saw no pong")
	}
	ws.Close(websocket.StatusNormalClosure, "")
}
