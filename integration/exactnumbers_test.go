//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultLog is a client transport that keeps the raw JSON of the last
// result the server sent: the go-sdk client decodes structuredContent into
// any, so numbers reach a test as float64 whatever the server wrote.
type resultLog struct {
	mcp.Transport
	mu   sync.Mutex
	last json.RawMessage
}

func (l *resultLog) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := l.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &loggedConn{Connection: c, log: l}, nil
}

type loggedConn struct {
	mcp.Connection
	log *resultLog
}

func (c *loggedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && r.Result != nil {
		c.log.mu.Lock()
		c.log.last = bytes.Clone(r.Result)
		c.log.mu.Unlock()
	}
	return m, err
}

// structuredRaw calls a tool and returns its structuredContent as the
// server wrote it, numbers as json.Number.
func (l *resultLog) structuredRaw(s *server, tool string, args map[string]any) map[string]any {
	s.t.Helper()
	res := s.call(tool, args)
	if res.IsError {
		s.t.Fatalf("%s(%v): %s", tool, args, text(res))
	}
	l.mu.Lock()
	last := l.last
	l.mu.Unlock()
	var wire struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(last, &wire); err != nil || wire.StructuredContent == nil {
		s.t.Fatalf("%s: no structuredContent in %s (%v)", tool, last, err)
	}
	dec := json.NewDecoder(bytes.NewReader(wire.StructuredContent))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		s.t.Fatal(err)
	}
	return v
}

// TestStructuredContentKeepsBigIntegers: integers past 2^53 (ids,
// nanosecond timestamps, int64 extremes) reach the client digit for digit
// in the structured content, the part Claude Code and VS Code show the
// model, not only in the text.
func TestStructuredContentKeepsBigIntegers(t *testing.T) {
	requirePython(t, "numpy", "pandas")
	log := &resultLog{}
	cmd := exec.Command(binary, "--state-dir", t.TempDir())
	requireKernel(t)
	s := connectVia(t, cmd, nil, func(tr mcp.Transport) mcp.Transport { log.Transport = tr; return log })
	if _, out := s.run("", "import numpy as np, pandas as pd\n"+
		"ts = pd.Timestamp('2024-01-02 03:04:05.123456789')\n"+
		"big = np.broadcast_to(np.int8(0), (2**53 + 1,))"); out.Status != "ok" {
		t.Fatalf("setup: %+v", out)
	}
	for _, c := range []struct{ expr, want string }{
		{"2**53 + 1", "9007199254740993"},
		{"2**63 - 1", "9223372036854775807"},
		{"-(2**63)", "-9223372036854775808"},
		{"2**64 + 1", "18446744073709551617"},
		{"np.int64(2**63 - 1)", "9223372036854775807"},
		{"ts.value", "1704164645123456789"},
		{"[2**53 + 1, {'ns': ts.value}]", `[9007199254740993,{"ns":1704164645123456789}]`},
		{"{'id': 2**63 - 1, 'ids': [-(2**63), 2**64 + 1]}", `{"id":9223372036854775807,"ids":[-9223372036854775808,18446744073709551617]}`},
	} {
		v := log.structuredRaw(s, "get_value", map[string]any{"expression": c.expr})
		got, err := json.Marshal(v["value"])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("get_value %s: structured value %s, want %s", c.expr, got, c.want)
		}
	}

	if v := log.structuredRaw(s, "run_code", map[string]any{"code": "2**64 + 1"}); v["result"] != "18446744073709551617" {
		t.Errorf("run_code 2**64 + 1: result %v", v["result"])
	}

	v := log.structuredRaw(s, "list_variables", nil)
	vars, _ := v["variables"].([]any)
	found := false
	for _, x := range vars {
		if row, _ := x.(map[string]any); row["name"] == "big" {
			found = true
			if shape, _ := json.Marshal(row["shape"]); string(shape) != "[9007199254740993]" {
				t.Errorf("list_variables: big's shape %s, want [9007199254740993]", shape)
			}
		}
	}
	if !found {
		t.Errorf("list_variables has no big: %v", v)
	}
}
