package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OrderedHTTP makes calls join their session's queue in the order their
// POSTs arrived, even when the handlers behind it start in another order
// (as the SDK's do: one goroutine per call).
func TestOrderedHTTPJoinsInArrivalOrder(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, err := s.lookupOrCreate("h")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		joined []int
		wg     sync.WaitGroup
	)
	// The handler says it has the request, then hands it to a goroutine
	// that starts after a random delay and joins the queue, as a tool
	// handler would; it answers (returns) when that call is done, as the
	// SDK's does.
	got := make(chan struct{})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		b, _ := io.ReadAll(r.Body)
		msg, err := jsonrpc.DecodeMessage(b)
		if err != nil {
			t.Error(err)
			return
		}
		req := msg.(*jsonrpc.Request)
		var p struct {
			Meta      mcp.Meta `json:"_meta"`
			Arguments struct {
				N int `json:"n"`
			} `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		done := make(chan struct{})
		defer func() { <-done }()
		wg.Go(func() {
			defer close(done)
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // the SDK's scheduling, made worse
			j, err := s.join(context.Background(), ss, p.Meta)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			joined = append(joined, p.Arguments.N)
			mu.Unlock()
			<-j.turn
			ss.leave(j)
		})
	})
	h := s.OrderedHTTP(inner)
	const n = 30
	var posts sync.WaitGroup
	for i := range n {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"h","n":%d}}}`, i, i)
		posts.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", strings.NewReader(body)))
		})
		<-got // the next POST arrives once this one is in
	}
	posts.Wait()
	wg.Wait()
	if !slices.IsSorted(joined) || len(joined) != n {
		t.Fatalf("calls joined the queue in the order %v", joined)
	}
}
