//go:build unix

package kernel

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// recorded is one iopub message of testdata/widgets.jsonl, recorded from
// ipykernel 7.4 with ipywidgets 8.1.9 and tqdm 4.70.1 by a jupyter_client
// script (status messages left out).
type recorded struct {
	Scenario    string          `json:"scenario"`
	ExecMsgID   string          `json:"exec_msg_id"`
	MsgType     string          `json:"msg_type"`
	ParentMsgID string          `json:"parent_msg_id"`
	Content     json.RawMessage `json:"content"`
	Buffers     []string        `json:"buffers"`
}

func loadRecorded(t testing.TB, scenario string) []recorded {
	t.Helper()
	f, err := os.Open("testdata/widgets.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recorded
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Scenario == scenario {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no recorded messages for %q", scenario)
	}
	return out
}

func (r recorded) message(t testing.TB) *wire.Message {
	m := &wire.Message{Header: wire.Header{MsgType: r.MsgType}, ParentHeader: wire.Header{MsgID: r.ParentMsgID}, Content: r.Content}
	for _, b := range r.Buffers {
		raw, err := base64.StdEncoding.DecodeString(b)
		if err != nil {
			t.Fatal(err)
		}
		m.Buffers = append(m.Buffers, raw)
	}
	return m
}

// replay feeds a recorded execution as the kernel's router and the
// execution's collector see it: every comm message to w first, then each
// message of the execution to its collector, and the others to w. It
// returns the cell's result.
func replay(t testing.TB, w *Widgets, scenario string) *ExecuteResult {
	t.Helper()
	msgs := loadRecorded(t, scenario)
	res := &ExecuteResult{MsgID: msgs[0].ExecMsgID}
	col := newCollector(res, ExecuteOptions{})
	col.widgets = w
	observe := w.observer()
	for _, r := range msgs {
		m := r.message(t)
		mine := r.ParentMsgID == res.MsgID
		if strings.HasPrefix(r.MsgType, "comm_") || !mine {
			observe(m)
		}
		if mine {
			col.iopub(r.MsgType, m.Content)
		}
	}
	col.finish()
	return res
}

// viewModel is the model id of the widget view among res's outputs.
func viewModel(t *testing.T, res *ExecuteResult) string {
	t.Helper()
	for _, o := range res.Outputs {
		if raw, ok := o.Data[WidgetViewMIME]; ok {
			var v struct {
				ModelID string `json:"model_id"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			return v.ModelID
		}
	}
	t.Fatalf("no widget view in %q", describeAll(res.Outputs))
	return ""
}

func mustWidget(t *testing.T, w *Widgets, id string) Widget {
	t.Helper()
	got, ok := w.Get(id)
	if !ok {
		t.Fatalf("no model %s", id)
	}
	return got
}

func TestWidgetsRecordedSlider(t *testing.T) {
	w := newWidgets()
	res := replay(t, w, "slider")
	s := mustWidget(t, w, viewModel(t, res))
	if s.ModelName() != "IntSliderModel" {
		t.Fatalf("model %q", s.ModelName())
	}
	for k, want := range map[string]any{"value": json.Number("3"), "max": json.Number("10"), "min": json.Number("0"), "description": "n"} {
		if s.State[k] != want {
			t.Errorf("%s = %#v, want %#v", k, s.State[k], want)
		}
	}
	// The layout and style models the slider names are there too.
	if w.Len() != 3 {
		t.Errorf("%d models, want 3 (layout, style, slider)", w.Len())
	}
}

// TestWidgetsUpdateAndClose: an update replaces the keys it names and keeps
// the others; comm_close forgets the model; subscribers see each step with
// only the keys that changed.
func TestWidgetsUpdateAndClose(t *testing.T) {
	w := newWidgets()
	var evs []WidgetEvent
	cancel := w.Subscribe(func(e WidgetEvent) { evs = append(evs, e) })
	defer cancel()
	var id string
	msgs := loadRecorded(t, "slider_update")
	observe := w.observer()
	for _, r := range msgs {
		m := r.message(t)
		observe(m)
		if r.MsgType == "comm_msg" {
			var c commContent
			json.Unmarshal(r.Content, &c)
			id = c.CommID
			s := mustWidget(t, w, id)
			if s.State["value"] != json.Number("7") || s.State["max"] != json.Number("100") {
				t.Fatalf("after the update: value %v max %v", s.State["value"], s.State["max"])
			}
		}
	}
	if _, ok := w.Get(id); ok {
		t.Fatal("the closed model is still there")
	}
	var kinds []string
	for _, e := range evs {
		if e.ModelID == id {
			kinds = append(kinds, e.Kind)
		}
	}
	if !slices.Equal(kinds, []string{WidgetOpened, WidgetUpdated, WidgetClosed}) {
		t.Fatalf("events %q", kinds)
	}
	for _, e := range evs {
		if e.Kind == WidgetUpdated && (len(e.State) != 1 || e.State["value"] != json.Number("7")) {
			t.Fatalf("update event state %v, want only value 7", e.State)
		}
	}
}

// TestWidgetsBuffers: binary buffers land at their buffer_paths, top-level
// (a recorded Image) and nested; a path that leads nowhere is skipped.
func TestWidgetsBuffers(t *testing.T) {
	w := newWidgets()
	res := replay(t, w, "buffers")
	img := mustWidget(t, w, viewModel(t, res))
	if got, _ := img.State["value"].([]byte); !bytes.Equal(got, []byte("\x89PNG\r\n")) {
		t.Fatalf("image value %#v", img.State["value"])
	}
	w.observe(w.epoch, &wire.Message{
		Header: wire.Header{MsgType: "comm_open"},
		Content: []byte(`{"comm_id":"n1","target_name":"jupyter.widget","data":{"state":{"a":[1,{"b":null}],"c":{}},
			"buffer_paths":[["a",1,"b"],["a",5],["x","y"],[3],["c","d"]]}}`),
		Buffers: [][]byte{{1}, {2}, {3}, {4}, {5}},
	})
	n := mustWidget(t, w, "n1")
	got, _ := json.Marshal(n.State)
	if want := `{"a":[1,{"b":"AQ=="}],"c":{"d":"BQ=="}}`; string(got) != want {
		t.Fatalf("state %s, want %s", got, want)
	}
	// A copy is the caller's own.
	n.State["a"].([]any)[1].(map[string]any)["b"].([]byte)[0] = 9
	if again := mustWidget(t, w, "n1"); again.State["a"].([]any)[1].(map[string]any)["b"].([]byte)[0] != 1 {
		t.Fatal("Get shares the model's buffers")
	}
}

// TestWidgetsIgnoresOthers: other comm targets, updates of unknown comms,
// state that is not an object and other methods change nothing.
func TestWidgetsIgnoresOthers(t *testing.T) {
	w := newWidgets()
	for _, c := range []struct{ typ, content string }{
		{"comm_open", `{"comm_id":"o","target_name":"other","data":{"state":{"a":1}}}`},
		{"comm_msg", `{"comm_id":"o","data":{"method":"update","state":{"a":2}}}`},
		{"comm_open", `{"comm_id":"s","target_name":"jupyter.widget","data":{"state":[1]}}`},
		{"comm_open", `{"comm_id":"","target_name":"jupyter.widget","data":{"state":{}}}`},
		{"comm_open", `not json`},
	} {
		w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: c.typ}, Content: []byte(c.content)})
	}
	if w.Len() != 0 {
		t.Fatalf("%d models: %v", w.Len(), w.All())
	}
	w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: "comm_open"}, Content: []byte(`{"comm_id":"m","target_name":"jupyter.widget","data":{"state":{"v":1}}}`)})
	w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: "comm_msg"}, Content: []byte(`{"comm_id":"m","data":{"method":"custom","content":{"v":2}}}`)})
	w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: "comm_msg"}, Content: []byte(`{"comm_id":"m","data":{"method":"update","state":"x"}}`)})
	if m := mustWidget(t, w, "m"); m.State["v"] != json.Number("1") {
		t.Fatalf("state %v", m.State)
	}
}

// TestWidgetsOutputCapture: the outputs printed inside `with out:` are the
// Output widget's, not the cell's, in the recorded order; interact's
// clear_output(wait=True) inside the capture clears the widget only.
func TestWidgetsOutputCapture(t *testing.T) {
	w := newWidgets()
	res := replay(t, w, "output")
	wantOutputs(t, res, "execute_result Output()")
	out := mustWidget(t, w, viewModel(t, res))
	if got := describeAll(out.Outputs); !slices.Equal(got, []string{`stream stdout "hi\n"`}) {
		t.Fatalf("captured %q", got)
	}

	res = replay(t, w, "interact")
	if len(res.Outputs) != 1 || res.Outputs[0].Type != OutputDisplayData {
		t.Fatalf("cell outputs %q", describeAll(res.Outputs))
	}
	box := mustWidget(t, w, viewModel(t, res))
	children := box.State["children"].([]any)
	o := mustWidget(t, w, children[1].(string)[len("IPY_MODEL_"):])
	if got := describeAll(o.Outputs); !slices.Equal(got, []string{`stream stdout "x is 5\n"`, "display_data 10"}) {
		t.Fatalf("interact captured %q", got)
	}
}

// TestWidgetsCaptureRules: nested captures go to the latest widget; a
// widget stops capturing when its msg_id changes or it closes; a clear
// without wait empties it at once, with wait at the next output;
// update_display_data stays the cell's; a widget whose state sets outputs
// shows those.
func TestWidgetsCaptureRules(t *testing.T) {
	w := newWidgets()
	res := &ExecuteResult{MsgID: "X"}
	col := newCollector(res, ExecuteOptions{})
	col.widgets = w
	feed := func(typ, content string) {
		m := &wire.Message{Header: wire.Header{MsgType: typ}, ParentHeader: wire.Header{MsgID: "X"}, Content: []byte(content)}
		w.observe(w.epoch, m)
		col.iopub(typ, m.Content)
	}
	open := func(id string) {
		feed("comm_open", `{"comm_id":"`+id+`","target_name":"jupyter.widget","data":{"state":{"_model_name":"OutputModel","msg_id":"","outputs":[]}}}`)
	}
	msgID := func(id, v string) {
		feed("comm_msg", `{"comm_id":"`+id+`","data":{"method":"update","state":{"msg_id":"`+v+`"}}}`)
	}
	print := func(s string) { feed("stream", fmt.Sprintf(`{"name":"stdout","text":%q}`, s)) }
	open("a")
	open("b")
	print("cell1 ")
	msgID("a", "X")
	print("a1 ")
	msgID("b", "X")
	print("b1 ")
	feed("update_display_data", `{"data":{"text/plain":"u"},"transient":{"display_id":"d"}}`)
	msgID("b", "")
	print("a2 ")
	feed("clear_output", `{"wait":true}`)
	print("a3 ")
	msgID("a", "Y") // another execution's: a stops capturing this one
	print("cell2")
	col.finish()
	wantOutputs(t, res, `stream stdout "cell1 cell2"`)
	if got := describeAll(mustWidget(t, w, "a").Outputs); !slices.Equal(got, []string{`stream stdout "a3 "`}) {
		t.Errorf("a captured %q", got)
	}
	if got := describeAll(mustWidget(t, w, "b").Outputs); !slices.Equal(got, []string{`stream stdout "b1 "`}) {
		t.Errorf("b captured %q", got)
	}
	msgID("a", "X")
	feed("clear_output", `{"wait":false}`)
	if got := mustWidget(t, w, "a").Outputs; len(got) != 0 {
		t.Errorf("a after clear_output: %q", describeAll(got))
	}
	feed("comm_close", `{"comm_id":"a","data":{}}`)
	print("cell3")
	col.finish()
	if got := describeAll(res.Outputs); len(got) != 2 || got[1] != `stream stdout "cell3"` {
		t.Errorf("after close: %q", got)
	}
	// Output.append_stdout sets the outputs in the state.
	feed("comm_msg", `{"comm_id":"b","data":{"method":"update","state":{"outputs":[{"output_type":"stream","name":"stdout","text":"set"}]}}}`)
	if got := describeAll(mustWidget(t, w, "b").Outputs); !slices.Equal(got, []string{`stream stdout "set"`}) {
		t.Errorf("b after outputs set %q", got)
	}
}

// TestWidgetsCaptureWithoutExecution: outputs no execution of this client
// waits for (a widget callback run for a comm_msg) go to the Output widget
// whose msg_id names their parent, as the router hands them over.
func TestWidgetsCaptureWithoutExecution(t *testing.T) {
	w := newWidgets()
	feed := w.observer()
	send := func(typ, parent, content string) {
		feed(&wire.Message{Header: wire.Header{MsgType: typ}, ParentHeader: wire.Header{MsgID: parent}, Content: []byte(content)})
	}
	send("comm_open", "X", `{"comm_id":"o","target_name":"jupyter.widget","data":{"state":{"_model_name":"OutputModel","msg_id":"","outputs":[]}}}`)
	send("stream", "C", `{"name":"stdout","text":"before"}`)
	send("comm_msg", "C", `{"comm_id":"o","data":{"method":"update","state":{"msg_id":"C"}}}`)
	send("clear_output", "C", `{"wait":true}`)
	send("stream", "C", `{"name":"stdout","text":"x is 7\n"}`)
	send("display_data", "C", `{"data":{"text/plain":"14"},"metadata":{}}`)
	send("stream", "D", `{"name":"stdout","text":"another request's"}`)
	send("comm_msg", "C", `{"comm_id":"o","data":{"method":"update","state":{"msg_id":""}}}`)
	send("stream", "C", `{"name":"stdout","text":"after"}`)
	if got := describeAll(mustWidget(t, w, "o").Outputs); !slices.Equal(got, []string{`stream stdout "x is 7\n"`, "display_data 14"}) {
		t.Fatalf("captured %q", got)
	}
	send("comm_msg", "C", `{"comm_id":"o","data":{"method":"update","state":{"msg_id":"E"}}}`)
	send("comm_close", "C", `{"comm_id":"o","data":{}}`)
	if len(w.captures) != 0 {
		t.Fatalf("captures left after the close: %v", w.captures)
	}
}

// TestWidgetsBounds: past the model count or byte bound the oldest models
// go, and Dropped counts them; captured outputs are bounded per widget.
func TestWidgetsBounds(t *testing.T) {
	w := newWidgets()
	w.maxModels = 3
	open := func(id, state string) {
		w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: "comm_open"}, Content: []byte(`{"comm_id":"` + id + `","target_name":"jupyter.widget","data":{"state":` + state + `}}`)})
	}
	for i := range 5 {
		open(fmt.Sprint("m", i), `{"v":1}`)
	}
	if w.Len() != 3 || w.Dropped() != 2 {
		t.Fatalf("len %d dropped %d", w.Len(), w.Dropped())
	}
	if _, ok := w.Get("m1"); ok {
		t.Fatal("m1 kept, it was among the oldest")
	}
	w.maxBytes = 1000
	open("big", `{"v":"`+string(bytes.Repeat([]byte("x"), 600))+`"}`)
	open("big2", `{"v":"`+string(bytes.Repeat([]byte("x"), 600))+`"}`)
	if _, ok := w.Get("big"); ok || w.Len() != 1 {
		t.Fatalf("after two 600-byte models under 1000: %d models, big kept %v", w.Len(), ok)
	}
	if w.bytes <= 0 || w.bytes > w.maxBytes {
		t.Fatalf("bytes %d", w.bytes)
	}
	// An update that grows a model past the bound drops it too.
	w.observe(w.epoch, &wire.Message{Header: wire.Header{MsgType: "comm_msg"}, Content: []byte(`{"comm_id":"big2","data":{"method":"update","state":{"w":"` + string(bytes.Repeat([]byte("y"), 600)) + `"}}}`)})
	if w.Len() != 0 || w.bytes != 0 {
		t.Fatalf("len %d bytes %d", w.Len(), w.bytes)
	}

	w = newWidgets()
	open("o", `{"_model_name":"OutputModel"}`)
	for range MaxWidgetOutputs + 10 {
		w.capture("o", "display_data", Output{Type: OutputDisplayData, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"x"`)}}, false)
	}
	o := mustWidget(t, w, "o")
	if len(o.Outputs) != MaxWidgetOutputs || o.OmittedOutputs != 10 {
		t.Fatalf("%d outputs, %d omitted", len(o.Outputs), o.OmittedOutputs)
	}
	w.capture("o", "clear_output", Output{}, false)
	big := string(bytes.Repeat([]byte("z"), MaxWidgetOutputBytes/2+1))
	w.capture("o", "stream", Output{Type: OutputStream, Name: "stdout", Text: big}, false)
	w.capture("o", "stream", Output{Type: OutputStream, Name: "stdout", Text: big}, false)
	if o = mustWidget(t, w, "o"); len(o.Outputs) != 1 || len(o.Outputs[0].Text) != len(big) || o.OmittedOutputs != 1 {
		t.Fatalf("%d outputs of %d bytes, %d omitted", len(o.Outputs), len(o.Outputs[0].Text), o.OmittedOutputs)
	}
}

// TestWidgetsReset: a restart forgets every model, and what the old process
// still sends is ignored.
func TestWidgetsReset(t *testing.T) {
	w := newWidgets()
	old := w.observer()
	replay(t, w, "slider")
	var reset bool
	defer w.Subscribe(func(e WidgetEvent) { reset = reset || e.Kind == WidgetReset })()
	w.reset()
	if w.Len() != 0 || !reset {
		t.Fatalf("after reset: %d models, reset event %v", w.Len(), reset)
	}
	for _, r := range loadRecorded(t, "slider") {
		old(r.message(t))
	}
	if w.Len() != 0 {
		t.Fatalf("the old process's messages were applied: %d models", w.Len())
	}
	replay(t, w, "slider")
	if w.Len() != 3 {
		t.Fatalf("the new process's messages: %d models", w.Len())
	}
}
