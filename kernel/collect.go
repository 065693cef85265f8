package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	fastjson "github.com/segmentio/encoding/json"
)

// collector applies iopub messages to a result the way a notebook applies
// them to a cell's outputs: consecutive stream text of one name merges,
// clear_output and update_display_data take effect. With limits set it
// keeps memory bounded whatever the code prints: the start and the end of
// each stream, and the first outputs.
type collector struct {
	res       *ExecuteResult
	onEvent   func(Event)
	clearNext bool // a clear_output(wait=True) is pending

	// stream holds the text of the last output while it is a stream, so
	// that thousands of chunks are joined once, not copied at every chunk.
	// It is open (active) exactly while the last output is that stream and
	// more chunks of it may follow; only an output after it closes it.
	stream     streamText
	maxOutputs int // 0: no limit
	// droppedStream names the stream of the last output when MaxOutputs
	// dropped it: its later chunks belong to that output, counted once.
	droppedStream string

	// widgets, when set, gets the outputs an Output widget captures.
	// capturing lists the Output widgets whose msg_id names this
	// execution, latest last: as in JupyterLab, the latest one takes the
	// execution's outputs instead of the cell. It follows the comm
	// messages in this execution's own order, so an output goes where
	// the msg_id was when the kernel sent it.
	widgets   *Widgets
	capturing []string
}

func newCollector(res *ExecuteResult, opts ExecuteOptions) *collector {
	return &collector{res: res, onEvent: opts.OnEvent, stream: streamText{half: opts.MaxStreamBytes / 2}, maxOutputs: opts.MaxOutputs}
}

// flush moves gathered stream text into the last output and closes the
// stream: call it when another output follows, or at the end. Chunks that
// arrive later start an output of their own.
func (c *collector) flush() {
	if !c.stream.active {
		return
	}
	outs := c.res.Outputs
	text, omitted := c.stream.finish()
	outs[len(outs)-1].Text = text
	if omitted > 0 {
		c.res.OmittedBytes += omitted
	}
}

// finish ends the collection, once the reply and the outputs are in (they
// come on different sockets, in either order): the last stream's text is
// final, and a failure the reply names no exception for gets the one its
// traceback showed. IPython fails a cell whose display formatter raised
// (plotly's "Mime type rendering requires nbformat", a _repr_html_ that
// raises) with no exception recorded: the reply's ename is "NoneType" and
// its evalue "None", while the error output names the real one.
func (c *collector) finish() {
	c.flush()
	e := c.res.Error
	if e == nil || (e.EName != "NoneType" && e.EName != "") {
		return
	}
	for i := len(c.res.Outputs) - 1; i >= 0; i-- {
		if o := c.res.Outputs[i]; o.Type == OutputError && o.EName != "" {
			e.EName, e.EValue = o.EName, o.EValue
			if len(e.Traceback) == 0 {
				e.Traceback = o.Traceback
			}
			return
		}
	}
}

func (c *collector) reply(content json.RawMessage) {
	var r executeReply
	if err := json.Unmarshal(content, &r); err != nil {
		c.res.Status = "error"
		c.res.Error = &ExecError{EName: "ProtocolError", EValue: "bad execute_reply: " + err.Error()}
		return
	}
	c.res.Status = r.Status
	c.res.ExecutionCount = r.ExecutionCount
	c.res.UserExpressions = r.UserExpressions
	c.res.Payload = r.Payload
	// Success or failure is the reply's to say, as in a notebook: error
	// outputs alone (showtraceback, %run of a failing script, %pdb's
	// StdinNotImplementedError) do not fail a cell that ran to its end.
	if r.Status == "error" {
		tb := r.Traceback
		if len(tb) == 0 {
			// Some kernels send the traceback on iopub only.
			for i := len(c.res.Outputs) - 1; i >= 0; i-- {
				if o := c.res.Outputs[i]; o.Type == OutputError && o.EName == r.EName {
					tb = o.Traceback
					break
				}
			}
		}
		c.res.Error = &ExecError{EName: r.EName, EValue: r.EValue, Traceback: tb}
	}
}

func (c *collector) iopub(msgType string, content json.RawMessage) {
	if strings.HasPrefix(msgType, "comm_") {
		c.comm(msgType, content)
		return
	}
	var m iopubContent
	if name, text, ok := decodeStream(content); ok && msgType == "stream" {
		m.Name, m.Text = name, text
	} else if err := fastjson.Unmarshal(content, &m); err != nil {
		c.res.Rejected++
		return
	}
	if msgType == "stream" && m.Name == "stderr" && isRateLimitNotice(m.Text) {
		c.res.RateLimited = true
	}
	out := Output{
		Name: m.Name, Text: m.Text, Data: m.Data, Metadata: m.Metadata,
		ExecutionCount: m.ExecutionCount, DisplayID: m.Transient.DisplayID,
		EName: m.EName, EValue: m.EValue, Traceback: m.Traceback,
	}
	if n := len(c.capturing); n > 0 && capturedTypes[msgType] {
		if msgType != "clear_output" {
			out.Type = msgType
		}
		if c.widgets.capture(c.capturing[n-1], msgType, out, m.Wait) {
			return
		}
	}
	switch msgType {
	case "stream":
		out.Type = OutputStream
	case "execute_result":
		out.Type = OutputExecuteResult
	case "display_data":
		out.Type = OutputDisplayData
	case "update_display_data":
		out.Type = OutputDisplayData
	case "error":
		out.Type = OutputError
	case "clear_output":
		if c.onEvent != nil {
			c.onEvent(Event{Kind: msgType, Wait: m.Wait})
		}
		c.flush()
		if m.Wait {
			c.clearNext = true
		} else {
			c.clear()
		}
		return
	default:
		return // execute_input, comm messages and the like
	}
	if c.onEvent != nil {
		c.onEvent(Event{Kind: msgType, Output: out})
	}
	if msgType == "update_display_data" {
		// Updates replace earlier displays with the same id and are not
		// outputs of their own: a stream being gathered stays open, since
		// in a notebook the next chunk still joins it.
		for i := range c.res.Outputs {
			if o := &c.res.Outputs[i]; o.DisplayID != "" && o.DisplayID == out.DisplayID {
				o.Data, o.Metadata = out.Data, out.Metadata
			}
		}
		return
	}
	if c.clearNext {
		c.stream.reset()
		c.clear()
		c.clearNext = false
	}
	outs := c.res.Outputs
	if n := len(outs); out.Type == OutputStream && c.stream.active && n > 0 && outs[n-1].Name == out.Name {
		c.stream.write(out.Text)
		return
	}
	if out.Type == OutputStream && c.droppedStream == out.Name {
		return // more of an output already counted as omitted
	}
	c.flush()
	c.droppedStream = ""
	// Errors always stay: they say why the run ended.
	if c.maxOutputs > 0 && len(outs) >= c.maxOutputs && out.Type != OutputError {
		c.res.OmittedOutputs++
		if out.Type == OutputStream {
			c.droppedStream = out.Name
		}
		return
	}
	if out.Type == OutputStream {
		c.stream.start(out.Text)
		out.Text = ""
	}
	c.res.Outputs = append(outs, out)
}

// capturedTypes are the messages an Output widget takes from the cell
// while it captures (JupyterLab's OutputModel message hook); the others,
// update_display_data among them, stay the cell's.
var capturedTypes = map[string]bool{"stream": true, "display_data": true, "execute_result": true, "error": true, "clear_output": true}

// comm follows the Output widgets that capture this execution: a widget
// whose state sets msg_id to this execution's id starts capturing it, and
// stops when msg_id changes or the widget closes.
func (c *collector) comm(msgType string, content json.RawMessage) {
	// Most comm messages are widget updates that set no msg_id (a tqdm
	// bar's every step): they are not decoded here.
	if c.widgets == nil || msgType != "comm_close" && !bytes.Contains(content, []byte(`"msg_id"`)) {
		return
	}
	var cm struct {
		CommID string `json:"comm_id"`
		Data   struct {
			State struct {
				MsgID *string `json:"msg_id"`
			} `json:"state"`
		} `json:"data"`
	}
	if fastjson.Unmarshal(content, &cm) != nil || cm.CommID == "" {
		return
	}
	if msgType != "comm_close" && cm.Data.State.MsgID == nil {
		return
	}
	c.capturing = slices.DeleteFunc(c.capturing, func(id string) bool { return id == cm.CommID })
	if msgType != "comm_close" && *cm.Data.State.MsgID == c.res.MsgID && c.res.MsgID != "" {
		c.capturing = append(c.capturing, cm.CommID)
	}
}

// clear empties the outputs, as clear_output does.
func (c *collector) clear() {
	c.res.Outputs = c.res.Outputs[:0]
	c.res.OmittedOutputs = 0
	c.droppedStream = ""
}

// streamText accumulates one stream output. Without a limit it keeps
// everything, as the chunks it was given, joined once at the end (a single
// chunk, often all 10 MB of a big print, is not copied at all); with one
// (half > 0) it keeps the first half bytes and the last half bytes, and
// counts what fell between them.
type streamText struct {
	active  bool
	half    int
	parts   []string // without a limit
	head    []byte
	tail    []byte // the newest bytes; at most 2*half before compaction
	omitted int
}

func (t *streamText) start(s string) {
	t.reset()
	t.active = true
	t.write(s)
}

func (t *streamText) reset() {
	clear(t.parts) // let the text go
	*t = streamText{half: t.half, parts: t.parts[:0], head: t.head[:0], tail: t.tail[:0]}
}

func (t *streamText) write(s string) {
	if t.half <= 0 {
		if s != "" {
			t.parts = append(t.parts, s)
		}
		return
	}
	if room := t.half - len(t.head); room > 0 {
		n := min(room, len(s))
		t.head = append(t.head, s[:n]...)
		s = s[n:]
	}
	if len(s) == 0 {
		return
	}
	if len(s) >= t.half {
		// The new text alone fills the tail: everything before its last
		// half bytes is omitted, without copying it.
		t.omitted += len(t.tail) + len(s) - t.half
		t.tail = append(t.tail[:0], s[len(s)-t.half:]...)
		return
	}
	t.tail = append(t.tail, s...)
	if len(t.tail) > 2*t.half {
		drop := len(t.tail) - t.half
		t.omitted += drop
		t.tail = append(t.tail[:0], t.tail[drop:]...)
	}
}

// finish returns the text, with a note where bytes were left out, and how
// many were; the cut edges are moved to whole UTF-8 characters.
func (t *streamText) finish() (string, int) {
	defer t.reset()
	if t.half <= 0 {
		return strings.Join(t.parts, ""), 0
	}
	if t.omitted == 0 {
		var b strings.Builder
		b.Grow(len(t.head) + len(t.tail))
		b.Write(t.head)
		b.Write(t.tail)
		return b.String(), 0
	}
	head, tail, omitted := t.head, t.tail, t.omitted
	if len(head) > 0 {
		// Drop a character the cut left incomplete at the end of head.
		i := len(head) - 1
		for i > 0 && !utf8.RuneStart(head[i]) {
			i--
		}
		if !utf8.FullRune(head[i:]) {
			head, omitted = head[:i], omitted+len(head)-i
		}
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail, omitted = tail[1:], omitted+1
	}
	return fmt.Sprintf("%s\n... [%d bytes of output omitted] ...\n%s", head, omitted, tail), omitted
}

// isRateLimitNotice recognises the stderr text a Jupyter server sends in
// place of iopub output beyond its rate limits (jupyter_server's
// ZMQChannelsWebsocketConnection.write_stderr).
func isRateLimitNotice(text string) bool {
	return strings.HasPrefix(text, "IOPub data rate exceeded") || strings.HasPrefix(text, "IOPub message rate exceeded")
}
