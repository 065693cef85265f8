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
	ss, err := s.eng.LookupOrCreate("h")
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
			// Turns come in the order of the queue, so the order they
			// come in is the order the calls joined.
			release, err := s.eng.WaitTurn(context.Background(), ss, s.placeOf(ss.ID(), p.Meta))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			joined = append(joined, p.Arguments.N)
			mu.Unlock()
			release()
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

// scriptedConn is a Connection that reads the given messages, then blocks
// until closed, and records what is written.
type scriptedConn struct {
	in     chan jsonrpc.Message
	closed chan struct{}
	once   sync.Once
}

func (c *scriptedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c *scriptedConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *scriptedConn) Close() error                                 { c.once.Do(func() { close(c.closed) }); return nil }
func (c *scriptedConn) SessionID() string                            { return "" }

type scriptedTransport struct{ c *scriptedConn }

func (t scriptedTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// TestOrderedDuplicateRequestID: a client that reuses the id of a call in
// flight (queued or not) must not leave a ticket unfinished, which would
// stall the session's queue; an id answered already may be used again.
func TestOrderedDuplicateRequestID(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := &scriptedConn{in: make(chan jsonrpc.Message, 8), closed: make(chan struct{})}
	conn, err := s.OrderedTransport(scriptedTransport{sc}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(id int64, tool string) *jsonrpc.Request {
		t.Helper()
		rid, _ := jsonrpc.MakeID(float64(id))
		req := &jsonrpc.Request{ID: rid, Method: "tools/call", Params: json.RawMessage(`{"name":"` + tool + `","arguments":{"session_id":"d","code":"1"}}`)}
		sc.in <- req
		if _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
		return req
	}
	answer := func(id jsonrpc.ID) {
		t.Helper()
		if err := conn.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// The SDK refuses a duplicate with an error response that has no id.
	refuse := func() { answer(jsonrpc.ID{}) }

	waiting := call(1, "wait_run") // not queued: no ticket
	if _, ok := s.ticketOf("d", metaOf(t, call(1, "run_code"))); ok {
		t.Error("a run_code reusing the id of a wait_run in flight was given a ticket")
	}
	refuse()
	first := call(2, "run_code")
	if _, ok := s.ticketOf("d", metaOf(t, call(2, "run_code"))); ok {
		t.Error("a run_code reusing the id of a run_code in flight was given a ticket")
	}
	refuse()
	answer(first.ID)
	answer(waiting.ID)
	// Both ids are free again: reusing them is legal, and ordered.
	for _, id := range []int64{1, 2} {
		tk, ok := s.ticketOf("d", metaOf(t, call(id, "run_code")))
		if !ok {
			t.Fatalf("id %d, reused after its answer, has no ticket", id)
		}
		if err := s.turns.Wait(ctx, tk); err != nil {
			t.Fatalf("id %d never got its turn: %v", id, err)
		}
		s.turns.Done(tk)
	}
}

func metaOf(t *testing.T, req *jsonrpc.Request) mcp.Meta {
	t.Helper()
	var p struct {
		Meta mcp.Meta `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p.Meta
}

// send_input takes a place in line too, and a call sent after it waits
// until send_input gives it back (once it has answered): a get_value sent
// in the same batch finds the question answered, not open.
func TestSendInputHoldsItsPlace(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	metaOf := func(body string) mcp.Meta {
		t.Helper()
		msg, err := jsonrpc.DecodeMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req := msg.(*jsonrpc.Request)
		if _, ok := s.stamp(req, ""); !ok {
			t.Fatalf("not stamped: %s", body)
		}
		var p struct {
			Meta mcp.Meta `json:"_meta"`
		}
		json.Unmarshal(req.Params, &p)
		return p.Meta
	}
	answer := metaOf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_input","arguments":{"text":"Ada"}}}`)
	get := metaOf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_value","arguments":{"expression":"name"}}}`)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.placeOf("default", get).Wait(cancelled); err == nil {
		t.Fatal("get_value's turn came before send_input gave its place back")
	}
	s.releaseTicket("default", answer)
	if err := s.placeOf("default", get).Wait(cancelled); err != nil {
		t.Fatalf("get_value after send_input answered: %v", err)
	}
}
