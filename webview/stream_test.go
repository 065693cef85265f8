package webview

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// An idle stream gets keep-alive comments; the request's subscription ends
// with the request.
func TestEventStreamKeepAliveAndEnd(t *testing.T) {
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	web := httptest.NewServer(New(Options{Engine: eng, Token: "t", KeepAlive: time.Millisecond}))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(rctx, "GET", web.URL+"/ui/api/events?token=t", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for {
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("no keep-alive before %v", err)
		}
		if l == ": keep-alive\n" {
			break
		}
	}
	if n := eng.Events().Subscribers(); n != 1 {
		t.Errorf("%d subscribers while the stream is open", n)
	}
	stop()
	for eng.Events().Subscribers() != 0 {
		if ctx.Err() != nil {
			t.Fatal("the subscription outlived its request")
		}
		time.Sleep(time.Millisecond) // polling the count, with the test's deadline
	}
}

// A Missed event reaches the page as kind "missed" with its count, and an
// output in the history's vocabulary.
func TestEventJSON(t *testing.T) {
	b, _ := json.Marshal(eventOf(engine.Event{Seq: 9, Kind: engine.Missed, Missed: 4}))
	if got := string(b); !strings.Contains(got, `"kind":"missed"`) || !strings.Contains(got, `"missed":4`) || !strings.Contains(got, `"output":null`) {
		t.Errorf("missed: %s", got)
	}
}
