// Widgets: the ipywidgets models a kernel describes on iopub, kept as a
// frontend keeps them, so that a widget view in an output can be read.

package kernel

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
	fastjson "github.com/segmentio/encoding/json"
)

// WidgetTarget is the comm target of ipywidgets' models.
const WidgetTarget = "jupyter.widget"

// WidgetViewMIME is the MIME type of an output that shows a widget: its
// value is {"model_id": ..., "version_major": 2, ...}.
const WidgetViewMIME = "application/vnd.jupyter.widget-view+json"

// The bounds of a kernel's widget models. The state is whatever the code
// running in the kernel sends, so it is held to these whatever it does:
// past them the oldest models are dropped (Widgets.Dropped counts them).
const (
	// MaxWidgetModels is the most models kept per kernel.
	MaxWidgetModels = 10000
	// MaxWidgetBytes bounds the state, buffers and captured outputs of
	// all models of a kernel together, counted as the JSON and buffer
	// bytes the kernel sent.
	MaxWidgetBytes = 64 << 20
	// MaxWidgetOutputs is the most outputs an Output widget keeps; later
	// ones are counted in Widget.OmittedOutputs.
	MaxWidgetOutputs = 1000
	// MaxWidgetOutputBytes bounds the captured outputs of one Output
	// widget; text past it is counted in Widget.OmittedOutputs.
	MaxWidgetOutputBytes = 1 << 20
)

// Widget is one widget model as the kernel last described it.
type Widget struct {
	ModelID string
	// State is the model's state: every key the kernel sent, merged key
	// by key (an update replaces the keys it names and keeps the others).
	// Values are what encoding/json decodes with UseNumber: map[string]any,
	// []any, string, json.Number, bool and nil; the message's binary
	// buffers are []byte values at their buffer_paths (JSON-encoding the
	// state turns them into base64 strings).
	State map[string]any
	// Outputs are what an Output widget shows: those its "outputs" state
	// set, then those it captured from executions while its "msg_id" named
	// them (see ExecuteOptions), as JupyterLab routes them. Consecutive
	// stream text of one name is merged.
	Outputs []Output
	// OmittedOutputs counts captured outputs (and stream chunks) left out
	// past MaxWidgetOutputs or MaxWidgetOutputBytes.
	OmittedOutputs int
}

// ModelName is the state's _model_name, e.g. "IntSliderModel".
func (w *Widget) ModelName() string {
	s, _ := w.State["_model_name"].(string)
	return s
}

// Widget event kinds.
const (
	WidgetOpened  = "open"   // comm_open: State is the whole state
	WidgetUpdated = "update" // comm_msg update or echo_update: State holds the keys it set
	WidgetClosed  = "close"  // comm_close: the model is gone
	WidgetOutput  = "output" // an Output widget's outputs changed: read them with Get
	WidgetDropped = "drop"   // the model was dropped over the bounds
	WidgetReset   = "reset"  // every model is gone: the kernel restarted (ModelID is empty)
)

// WidgetEvent is one change to a kernel's widget models, handed to the
// functions given to Widgets.Subscribe.
type WidgetEvent struct {
	Kind    string // WidgetOpened, WidgetUpdated, ...
	ModelID string
	// State holds the keys the message set (all of them for an open), with
	// their buffers, in a copy of the subscriber's own.
	State map[string]any
}

// Widgets holds the ipywidgets models of one kernel: comm_open, comm_msg
// and comm_close of target WidgetTarget on iopub, from every client's
// executions alike. It is safe for concurrent use. A restart of the kernel
// empties it; it keeps its subscribers.
type Widgets struct {
	mu      sync.Mutex
	epoch   uint64 // one per kernel process: messages of an older one are ignored
	models  map[string]*widgetModel
	order   list.List // of model ids, oldest first
	bytes   int64
	dropped int
	// captures lists, by the msg_id their state names, the Output
	// widgets capturing that request's outputs, latest last.
	captures  map[string][]string
	maxModels int
	maxBytes  int64

	subMu  sync.Mutex
	subs   map[int]func(WidgetEvent)
	nextID int
}

type widgetModel struct {
	id        string
	state     map[string]any
	sizes     map[string]int // bytes of each key's JSON and buffers
	outputs   []Output
	outBytes  int
	omitted   int
	clearNext bool   // a clear_output(wait=True) is pending
	capturing string // the msg_id its state names (Output widgets)
	elem      *list.Element
}

func (m *widgetModel) size() int64 {
	n := m.outBytes
	for _, s := range m.sizes {
		n += s
	}
	return int64(n)
}

func newWidgets() *Widgets {
	return &Widgets{models: make(map[string]*widgetModel), captures: make(map[string][]string), maxModels: MaxWidgetModels, maxBytes: MaxWidgetBytes}
}

// Get returns a copy of the model modelID (a deep copy: the caller may
// change it), and false when there is no such model.
func (w *Widgets) Get(modelID string) (Widget, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.models[modelID]
	if m == nil {
		return Widget{}, false
	}
	return m.snapshot(), true
}

// All returns a copy of every model, oldest first.
func (w *Widgets) All() []Widget {
	w.mu.Lock()
	defer w.mu.Unlock()
	all := make([]Widget, 0, len(w.models))
	for e := w.order.Front(); e != nil; e = e.Next() {
		all = append(all, w.models[e.Value.(string)].snapshot())
	}
	return all
}

// Len is the number of models held.
func (w *Widgets) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.models)
}

// Dropped counts the models dropped because the bounds (MaxWidgetModels,
// MaxWidgetBytes) were reached, since the kernel started.
func (w *Widgets) Dropped() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Subscribe calls f for every change from now on, until the returned
// function is called. f is called on the goroutine that reads the kernel's
// messages (or an execution's), outside any lock but possibly from several
// goroutines at once: it must be quick, must not block, and may call Get.
func (w *Widgets) Subscribe(f func(WidgetEvent)) (cancel func()) {
	w.subMu.Lock()
	defer w.subMu.Unlock()
	if w.subs == nil {
		w.subs = make(map[int]func(WidgetEvent))
	}
	id := w.nextID
	w.nextID++
	w.subs[id] = f
	return func() {
		w.subMu.Lock()
		delete(w.subs, id)
		w.subMu.Unlock()
	}
}

func (w *Widgets) subscribers() []func(WidgetEvent) {
	w.subMu.Lock()
	defer w.subMu.Unlock()
	if len(w.subs) == 0 {
		return nil
	}
	fs := make([]func(WidgetEvent), 0, len(w.subs))
	for _, f := range w.subs {
		fs = append(fs, f)
	}
	return fs
}

func (w *Widgets) notify(evs []WidgetEvent) {
	if len(evs) == 0 {
		return
	}
	fs := w.subscribers()
	for _, e := range evs {
		for _, f := range fs {
			if e.State != nil {
				e.State = copyState(e.State)
			}
			f(e)
		}
	}
}

// reset forgets every model, as a new kernel process has none, and returns
// the epoch of the new process: messages observed for an older one are
// ignored from now on.
func (w *Widgets) reset() uint64 {
	w.mu.Lock()
	w.epoch++
	epoch := w.epoch
	had := len(w.models) > 0
	clear(w.models)
	clear(w.captures)
	w.order.Init()
	w.bytes, w.dropped = 0, 0
	w.mu.Unlock()
	if had {
		w.notify([]WidgetEvent{{Kind: WidgetReset}})
	}
	return epoch
}

// observer returns the function a generation's router feeds its iopub comm
// messages to.
func (w *Widgets) observer() func(*wire.Message) {
	w.mu.Lock()
	epoch := w.epoch
	w.mu.Unlock()
	return func(m *wire.Message) {
		if strings.HasPrefix(m.Header.MsgType, "comm_") {
			w.observe(epoch, m)
		} else {
			w.orphan(epoch, m)
		}
	}
}

// orphan takes an output no execution of this client waits for (a widget
// callback's, run for a comm_msg, or another client's execution's) when an
// Output widget captures its parent, as JupyterLab routes it.
func (w *Widgets) orphan(epoch uint64, msg *wire.Message) {
	w.mu.Lock()
	ids := w.captures[msg.ParentHeader.MsgID]
	current := w.epoch == epoch
	w.mu.Unlock()
	if len(ids) == 0 || !current {
		return
	}
	var m iopubContent
	if fastjson.Unmarshal(msg.Content, &m) != nil {
		return
	}
	out := Output{Type: msg.Header.MsgType, Name: m.Name, Text: m.Text, Data: m.Data, Metadata: m.Metadata,
		ExecutionCount: m.ExecutionCount, DisplayID: m.Transient.DisplayID,
		EName: m.EName, EValue: m.EValue, Traceback: m.Traceback}
	w.capture(ids[len(ids)-1], msg.Header.MsgType, out, m.Wait)
}

// setCapture notes the msg_id an Output widget's state names, so that
// orphan finds the widget capturing a parent. Call with w.mu held.
func (w *Widgets) setCapture(m *widgetModel, msgID string) {
	if m.capturing != "" {
		left := slices.DeleteFunc(w.captures[m.capturing], func(id string) bool { return id == m.id })
		if len(left) == 0 {
			delete(w.captures, m.capturing)
		} else {
			w.captures[m.capturing] = left
		}
	}
	m.capturing = msgID
	if msgID != "" {
		w.captures[msgID] = append(w.captures[msgID], m.id)
	}
}

// commContent covers comm_open, comm_msg and comm_close.
type commContent struct {
	CommID     string `json:"comm_id"`
	TargetName string `json:"target_name"`
	Data       struct {
		Method      string            `json:"method"`
		State       json.RawMessage   `json:"state"`
		BufferPaths []json.RawMessage `json:"buffer_paths"`
	} `json:"data"`
}

// observe applies one iopub comm message.
func (w *Widgets) observe(epoch uint64, msg *wire.Message) {
	typ := msg.Header.MsgType
	if typ != "comm_open" && typ != "comm_msg" && typ != "comm_close" {
		return
	}
	var c commContent
	if fastjson.Unmarshal(msg.Content, &c) != nil || c.CommID == "" {
		return
	}
	var (
		state map[string]any
		sizes map[string]int
	)
	if typ == "comm_open" || typ == "comm_msg" && (c.Data.Method == "update" || c.Data.Method == "echo_update") {
		if typ == "comm_open" && c.TargetName != WidgetTarget {
			return
		}
		var ok bool
		if state, sizes, ok = decodeWidgetState(c.Data.State, c.Data.BufferPaths, msg.Buffers); !ok {
			return
		}
	}
	w.mu.Lock()
	if w.epoch != epoch {
		w.mu.Unlock()
		return
	}
	var evs []WidgetEvent
	m := w.models[c.CommID]
	switch {
	case typ == "comm_open":
		if m != nil {
			w.remove(m)
		}
		m = &widgetModel{id: c.CommID, state: state, sizes: sizes}
		m.elem = w.order.PushBack(c.CommID)
		w.models[c.CommID] = m
		w.bytes += m.size()
		if raw, ok := state["outputs"]; ok {
			w.setOutputs(m, raw)
		}
		if id, ok := state["msg_id"].(string); ok {
			w.setCapture(m, id)
		}
		evs = append(evs, WidgetEvent{Kind: WidgetOpened, ModelID: c.CommID, State: state})
	case m == nil:
		// A comm of another target, or a model dropped over the bounds.
	case typ == "comm_close":
		w.remove(m)
		evs = append(evs, WidgetEvent{Kind: WidgetClosed, ModelID: c.CommID})
	case state != nil:
		for k, v := range state {
			w.bytes += int64(sizes[k] - m.sizes[k])
			m.state[k], m.sizes[k] = v, sizes[k]
		}
		if raw, ok := state["outputs"]; ok {
			w.setOutputs(m, raw)
		}
		if id, ok := state["msg_id"].(string); ok {
			w.setCapture(m, id)
		}
		evs = append(evs, WidgetEvent{Kind: WidgetUpdated, ModelID: c.CommID, State: state})
	}
	evs = w.enforce(evs)
	w.mu.Unlock()
	w.notify(evs)
}

// remove forgets m. Call with w.mu held.
func (w *Widgets) remove(m *widgetModel) {
	w.setCapture(m, "")
	w.bytes -= m.size()
	w.order.Remove(m.elem)
	delete(w.models, m.id)
}

// enforce drops the oldest models while the bounds are exceeded. Call with
// w.mu held.
func (w *Widgets) enforce(evs []WidgetEvent) []WidgetEvent {
	for len(w.models) > w.maxModels || w.bytes > w.maxBytes {
		e := w.order.Front()
		if e == nil {
			break
		}
		id := e.Value.(string)
		w.remove(w.models[id])
		w.dropped++
		evs = append(evs, WidgetEvent{Kind: WidgetDropped, ModelID: id})
	}
	return evs
}

// setOutputs replaces an Output widget's outputs with those its state
// names, as the frontend does when the kernel sets them (Output.append_stdout
// and friends). Call with w.mu held.
func (w *Widgets) setOutputs(m *widgetModel, v any) {
	w.bytes -= int64(m.outBytes)
	m.outputs, m.outBytes, m.omitted, m.clearNext = nil, 0, 0, false
	list, _ := v.([]any)
	for _, item := range list {
		raw, err := json.Marshal(item)
		if err != nil {
			continue
		}
		var o iopubContent
		var typ struct {
			OutputType string `json:"output_type"`
		}
		if json.Unmarshal(raw, &o) != nil || json.Unmarshal(raw, &typ) != nil {
			continue
		}
		m.addOutput(Output{Type: typ.OutputType, Name: o.Name, Text: o.Text, Data: o.Data, Metadata: o.Metadata,
			ExecutionCount: o.ExecutionCount, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback})
	}
	w.bytes += int64(m.outBytes)
}

// capture adds an output an execution produced while the Output widget
// modelID captured it, or applies its clear_output. It reports false when
// there is no such model (it was dropped), so the output stays the cell's.
func (w *Widgets) capture(modelID, msgType string, out Output, wait bool) bool {
	w.mu.Lock()
	m := w.models[modelID]
	if m == nil {
		w.mu.Unlock()
		return false
	}
	before := m.outBytes
	switch {
	case msgType == "clear_output" && wait:
		m.clearNext = true
	case msgType == "clear_output":
		m.outputs, m.outBytes, m.omitted = nil, 0, 0
	default:
		if m.clearNext {
			m.outputs, m.outBytes, m.omitted, m.clearNext = nil, 0, 0, false
		}
		m.addOutput(out)
	}
	w.bytes += int64(m.outBytes - before)
	evs := w.enforce([]WidgetEvent{{Kind: WidgetOutput, ModelID: modelID}})
	w.mu.Unlock()
	w.notify(evs)
	return true
}

// addOutput appends o within the bounds, merging stream text.
func (m *widgetModel) addOutput(o Output) {
	size := outputSize(o)
	if m.outBytes+size > MaxWidgetOutputBytes {
		m.omitted++
		return
	}
	if n := len(m.outputs); o.Type == OutputStream && n > 0 && m.outputs[n-1].Type == OutputStream && m.outputs[n-1].Name == o.Name {
		m.outputs[n-1].Text += o.Text
		m.outBytes += len(o.Text)
		return
	}
	if len(m.outputs) >= MaxWidgetOutputs {
		m.omitted++
		return
	}
	m.outputs = append(m.outputs, o)
	m.outBytes += size
}

func outputSize(o Output) int {
	n := len(o.Text) + len(o.EName) + len(o.EValue)
	for _, v := range o.Data {
		n += len(v)
	}
	for _, v := range o.Metadata {
		n += len(v)
	}
	for _, l := range o.Traceback {
		n += len(l)
	}
	return n
}

func (m *widgetModel) snapshot() Widget {
	w := Widget{ModelID: m.id, State: copyState(m.state), OmittedOutputs: m.omitted}
	if len(m.outputs) > 0 {
		w.Outputs = make([]Output, len(m.outputs))
		copy(w.Outputs, m.outputs)
		for i := range w.Outputs {
			w.Outputs[i].Traceback = append([]string(nil), w.Outputs[i].Traceback...)
			w.Outputs[i].Data = copyRaw(w.Outputs[i].Data)
			w.Outputs[i].Metadata = copyRaw(w.Outputs[i].Metadata)
		}
	}
	return w
}

func copyRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = append(json.RawMessage(nil), v...)
	}
	return c
}

func copyState(s map[string]any) map[string]any {
	c := make(map[string]any, len(s))
	for k, v := range s {
		c[k] = copyValue(v)
	}
	return c
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyState(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = copyValue(e)
		}
		return c
	case []byte:
		return bytes.Clone(v)
	default:
		return v // immutable: string, json.Number, bool, nil
	}
}

// decodeWidgetState decodes a message's state and puts its buffers at
// their paths, as ipywidgets' _put_buffers does. sizes gives each key's
// bytes. A path that does not lead into the state is skipped; ok is false
// when the state is not a JSON object.
func decodeWidgetState(raw json.RawMessage, paths []json.RawMessage, buffers [][]byte) (state map[string]any, sizes map[string]int, ok bool) {
	var keys map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		keys = map[string]json.RawMessage{}
	} else if fastjson.Unmarshal(raw, &keys) != nil {
		return nil, nil, false
	}
	state = make(map[string]any, len(keys))
	sizes = make(map[string]int, len(keys))
	for k, v := range keys {
		var val any
		if rest, err := fastjson.Parse(v, &val, fastjson.UseNumber); err != nil || len(rest) != 0 {
			return nil, nil, false
		}
		state[k], sizes[k] = val, len(k)+len(v)
	}
	for i, p := range paths {
		if i >= len(buffers) {
			break
		}
		var path []any
		if rest, err := fastjson.Parse(p, &path, fastjson.UseNumber); err != nil || len(rest) != 0 || len(path) == 0 {
			continue
		}
		top, ok := path[0].(string)
		if !ok {
			continue
		}
		buf := bytes.Clone(buffers[i])
		if putBuffer(state, path, buf) {
			sizes[top] += len(buf)
		}
	}
	return state, sizes, true
}

// putBuffer sets buf at path inside v, reporting whether the path led
// somewhere.
func putBuffer(v any, path []any, buf []byte) bool {
	for i, step := range path {
		last := i == len(path)-1
		switch c := v.(type) {
		case map[string]any:
			key, ok := step.(string)
			if !ok {
				return false
			}
			if last {
				c[key] = buf
				return true
			}
			v = c[key]
		case []any:
			num, ok := step.(json.Number)
			if !ok {
				return false
			}
			n, err := num.Int64()
			if err != nil || n < 0 || n >= int64(len(c)) {
				return false
			}
			if last {
				c[n] = buf
				return true
			}
			v = c[n]
		default:
			return false
		}
	}
	return false
}

// Widgets returns the kernel's widget models. The same *Widgets serves the
// kernel for its whole life: a restart empties it and keeps its subscribers.
func (k *Kernel) Widgets() *Widgets { return k.widgets }

// SendCommMsg sends a comm_msg to the kernel on shell, as a frontend does
// when a widget changes on its side: data is the message's data, e.g.
// {"method": "update", "state": {"value": 7}, "buffer_paths": []} for the
// model commID, and buffers its binary buffers. The message is signed and
// carries this client's session as every request does. It returns once the
// message is sent; ipywidgets answers an update with an echo_update on
// iopub, which Widgets applies.
func (k *Kernel) SendCommMsg(ctx context.Context, commID string, data any, buffers ...[]byte) error {
	g, err := k.current()
	if err != nil {
		return err
	}
	if d := g.dead(); d != nil {
		return d
	}
	if strings.TrimSpace(commID) == "" {
		return errEmptyCommID
	}
	msg, err := wire.NewMessage("comm_msg", k.session, map[string]any{"comm_id": commID, "data": data})
	if err != nil {
		return err
	}
	msg.Buffers = buffers
	return g.conn.Send(ctx, Shell, msg)
}

var errEmptyCommID = errors.New("kernel: SendCommMsg: empty comm id")
