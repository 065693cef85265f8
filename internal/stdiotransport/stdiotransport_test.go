package stdiotransport

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// Bad lines are answered and skipped; good ones pass through unchanged, in
// order, and the stream goes on after each bad one.
func TestLineFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`not json at all`,
		``,
		`42`,
		`{"jsonrpc":"2.0","id":"x","method":5}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // no newline at the end
	}, "\n")
	var replies bytes.Buffer
	f := &lineFilter{r: bufio.NewReader(strings.NewReader(in)), out: &replies}
	passed, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	wantPassed := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	if string(passed) != wantPassed {
		t.Fatalf("passed:\n%s\nwant:\n%s", passed, wantPassed)
	}
	lines := strings.Split(strings.TrimSpace(replies.String()), "\n")
	if len(lines) != 3 ||
		!strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`) ||
		!strings.HasPrefix(lines[1], `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`) ||
		!strings.HasPrefix(lines[2], `{"jsonrpc":"2.0","id":"x","error":{"code":-32600,`) {
		t.Fatalf("replies:\n%s", replies.String())
	}
}

func TestLineFilterOverlongLine(t *testing.T) {
	in := strings.Repeat("x", maxLine+10) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	var replies bytes.Buffer
	f := &lineFilter{r: bufio.NewReaderSize(strings.NewReader(in), 4096), out: &replies}
	passed, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(passed) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" || !strings.Contains(replies.String(), "longer than") {
		t.Fatalf("passed %q, replies %q", passed, replies.String())
	}
}
