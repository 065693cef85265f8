// Package stdiotransport is MCP over stdin and stdout that survives bad
// input: each line is checked before the SDK reads it.
package stdiotransport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine is the longest JSON-RPC line read, as the SDK's own default.
const maxLine = mcp.DefaultMaxLineLength

// Stdio is MCP over stdin and stdout that survives bad input. The
// SDK's stdio transport decodes the stream as one JSON sequence, so a
// single malformed line ends the session. Here each line is checked first:
// one that is not JSON gets a -32700 parse error, one that is not a
// JSON-RPC message a -32600 invalid request, an over-long one a -32600 as
// well, and the server reads on.
func Stdio() mcp.Transport { return New(os.Stdin, os.Stdout) }

// New is Stdio over any reader and writer.
func New(r io.Reader, w io.Writer) mcp.Transport {
	out := &lockedWriter{w: w}
	return &mcp.IOTransport{Reader: &lineFilter{r: bufio.NewReaderSize(r, 64<<10), out: out, src: r}, Writer: out, MaxLineLength: maxLine + 1}
}

// lockedWriter serializes writes: the SDK writes each message in one Write,
// and the filter's error replies must not land inside one.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// lineFilter passes on the lines that are JSON-RPC messages (or batches)
// and answers the others itself.
type lineFilter struct {
	r   *bufio.Reader
	src io.Reader
	out io.Writer
	buf []byte // the passed line not yet read
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.readLine()
		if len(line) > 0 {
			f.buf = f.check(line)
		}
		if err != nil {
			if len(f.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// readLine returns the next line with its newline; a line longer than
// maxLine is consumed and replaced by an error reply.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			// Skip the rest of it without keeping it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.r.ReadSlice('\n')
			}
			f.reply(-32600, fmt.Sprintf("Invalid Request: message longer than %d bytes", maxLine), nil)
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, nil
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// check returns the line to pass on, or nil after answering it.
func (f *lineFilter) check(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	if !json.Valid(trimmed) {
		f.reply(-32700, "Parse error: the line is not valid JSON", nil)
		return nil
	}
	if trimmed[0] == '[' {
		return append(trimmed, '\n') // a batch: the SDK answers for each
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(trimmed, &probe)
		f.reply(-32600, "Invalid Request: "+err.Error(), probe.ID)
		return nil
	}
	return append(trimmed, '\n')
}

func (f *lineFilter) reply(code int, msg string, id json.RawMessage) {
	if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	f.out.Write(append(b, '\n'))
}

// Close closes the underlying reader if it can be closed.
func (f *lineFilter) Close() error {
	if c, ok := f.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
