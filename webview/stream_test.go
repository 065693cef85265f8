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
	"github.com/kernel-mcp/kernel-mcp/kernel"
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

// A display with an id, and an update naming it, reach the page with the
// id as Jupyter's transient.display_id (the page replaces the display in
// place); an output without one has no transient.
func TestEventDisplayID(t *testing.T) {
	data := map[string]json.RawMessage{"text/plain": json.RawMessage(`"v1"`)}
	for _, c := range []struct {
		out  kernel.Output
		want string
	}{
		{kernel.Output{Type: "display_data", Data: data, DisplayID: "d7"}, `"output_type":"display_data","data":{"text/plain":"v1"},"transient":{"display_id":"d7"}`},
		{kernel.Output{Type: "update_display_data", Data: data, DisplayID: "d7"}, `"output_type":"update_display_data","data":{"text/plain":"v1"},"transient":{"display_id":"d7"}`},
		{kernel.Output{Type: "display_data", Data: data}, `"output_type":"display_data","data":{"text/plain":"v1"}}`},
	} {
		b, _ := json.Marshal(eventOf(engine.Event{Seq: 1, Kind: engine.RunOutput, Output: &c.out}))
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%+v: %s, want it to hold %s", c.out, b, c.want)
		}
	}
}
