package widgettext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// models is a Source made of widgets given as JSON states.
type models map[string]kernel.Widget

func (m models) Get(id string) (kernel.Widget, bool) { w, ok := m[id]; return w, ok }

func (m models) add(t *testing.T, id, state string, outputs ...kernel.Output) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(state))
	d.UseNumber()
	var s map[string]any
	if err := d.Decode(&s); err != nil {
		t.Fatalf("%s: %v", state, err)
	}
	m[id] = kernel.Widget{ModelID: id, State: s, Outputs: outputs}
}

func view(id string) kernel.Output {
	return kernel.Output{Type: kernel.OutputDisplayData, Data: map[string]json.RawMessage{
		"text/plain":          json.RawMessage(`"repr"`),
		kernel.WidgetViewMIME: json.RawMessage(`{"model_id":"` + id + `","version_major":2,"version_minor":0}`),
	}}
}

func mustRender(t *testing.T, src Source, id string) string {
	t.Helper()
	s, ok := Render(src, view(id))
	if !ok {
		t.Fatalf("Render(%s): not rendered", id)
	}
	return s
}

func TestRenderControls(t *testing.T) {
	m := models{}
	// States as ipywidgets 8.1 sends them (fields trimmed).
	m.add(t, "slider", `{"_model_name":"IntSliderModel","description":"n","value":3,"min":0,"max":10,"step":1,"layout":"IPY_MODEL_l"}`)
	m.add(t, "fslider", `{"_model_name":"FloatSliderModel","description":"","value":0.5,"min":0.0,"max":1.0,"step":0.1}`)
	m.add(t, "range", `{"_model_name":"IntRangeSliderModel","description":"r","value":[2,5],"min":0,"max":10,"step":1}`)
	m.add(t, "dd", `{"_model_name":"DropdownModel","_options_labels":["a","b"],"description":"pick","index":1}`)
	m.add(t, "ddnone", `{"_model_name":"DropdownModel","_options_labels":["a","b"],"description":"","index":null}`)
	m.add(t, "multi", `{"_model_name":"SelectMultipleModel","_options_labels":["a","b","c"],"description":"m","index":[0,2]}`)
	m.add(t, "cb", `{"_model_name":"CheckboxModel","description":"ok","value":true}`)
	m.add(t, "text", `{"_model_name":"TextModel","description":"name","value":"t \"q\""}`)
	m.add(t, "pw", `{"_model_name":"PasswordModel","description":"pw","value":"secret"}`)
	m.add(t, "btn", `{"_model_name":"ButtonModel","description":"Go","button_style":""}`)
	m.add(t, "html", `{"_model_name":"HTMLModel","description":"","value":"<b>bold</b> &amp; x<script>alert(1)</script><br>next"}`)
	m.add(t, "label", `{"_model_name":"LabelModel","description":"","value":"a <b> label"}`)
	m.add(t, "prog", `{"_model_name":"FloatProgressModel","description":"","value":2.5,"min":0.0,"max":5.0,"bar_style":""}`)
	m.add(t, "img", `{"_model_name":"ImageModel","format":"png","width":"","height":"","layout":"IPY_MODEL_x"}`)
	m["img"].State["value"] = []byte("\x89PNG\r\n")
	m.add(t, "color", `{"_model_name":"ColorPickerModel","description":"c","value":"#ff0000","concise":false}`)
	for id, want := range map[string]string{
		"slider":  `IntSlider "n": 3 (0–10, step 1)`,
		"fslider": `FloatSlider: 0.5 (0.0–1.0, step 0.1)`,
		"range":   `IntRangeSlider "r": 2–5 (0–10, step 1)`,
		"dd":      `Dropdown "pick": b (options: a, b)`,
		"ddnone":  `Dropdown: (none) (options: a, b)`,
		"multi":   `SelectMultiple "m": a, c (options: a, b, c)`,
		"cb":      `Checkbox "ok": true`,
		"text":    `Text "name": "t \"q\""`,
		"pw":      `Password "pw": (hidden)`,
		"btn":     `Button "Go"`,
		"html":    "bold & x\nnext",
		"label":   "a <b> label",
		"prog":    `FloatProgress: 2.5 (0.0–5.0)`,
		"img":     `Image (format: "png", height: "", value: <6 bytes>, width: "")`,
		"color":   `ColorPicker "c" (concise: false, value: "#ff0000")`,
	} {
		if got := mustRender(t, m, id); got != want {
			t.Errorf("%s:\n got %q\nwant %q", id, got, want)
		}
	}
	if _, ok := Render(m, view("gone")); ok {
		t.Error("a missing model rendered")
	}
	if _, ok := Render(m, kernel.Output{Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"x"`)}}); ok {
		t.Error("an output without a widget view rendered")
	}
}

// TestRenderContainers: children one per line, indented; Tab titles; an
// Output widget's outputs like a run's (a widget it displays rendered in
// place); a cycle or a deep tree is cut, not followed.
func TestRenderContainers(t *testing.T) {
	m := models{}
	m.add(t, "s", `{"_model_name":"IntSliderModel","description":"x","value":5,"min":-5,"max":15,"step":1}`)
	m.add(t, "cb", `{"_model_name":"CheckboxModel","description":"ok","value":false}`)
	m.add(t, "out", `{"_model_name":"OutputModel","msg_id":"","outputs":[]}`,
		kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: "x is 5\n\x1b[31mred\x1b[0m\n"},
		kernel.Output{Type: kernel.OutputDisplayData, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"10"`)}},
		kernel.Output{Type: kernel.OutputError, EName: "ValueError", EValue: "bad"},
		kernel.Output{Type: kernel.OutputDisplayData, Data: map[string]json.RawMessage{"image/png": json.RawMessage(`"AAAA"`)}},
		view("cb"),
	)
	m.add(t, "box", `{"_model_name":"VBoxModel","children":["IPY_MODEL_s","IPY_MODEL_out","IPY_MODEL_missing"]}`)
	want := "VBox\n  IntSlider \"x\": 5 (-5–15, step 1)\n  x is 5\n  red\n  10\n  ValueError: bad\n  [image/png]\n  Checkbox \"ok\": false\n  (a widget no longer available)"
	if got := mustRender(t, m, "box"); got != want {
		t.Errorf("box:\n got %q\nwant %q", got, want)
	}
	m.add(t, "tab", `{"_model_name":"TabModel","titles":["one",""],"children":["IPY_MODEL_s","IPY_MODEL_cb"]}`)
	if got, want := mustRender(t, m, "tab"), "Tab\n  [one]\n    IntSlider \"x\": 5 (-5–15, step 1)\n  Checkbox \"ok\": false"; got != want {
		t.Errorf("tab:\n got %q\nwant %q", got, want)
	}
	m.add(t, "c1", `{"_model_name":"HBoxModel","children":["IPY_MODEL_c2"]}`)
	m.add(t, "c2", `{"_model_name":"VBoxModel","children":["IPY_MODEL_c1","IPY_MODEL_c1"]}`)
	if got, want := mustRender(t, m, "c1"), "HBox\n  VBox\n    (HBox, shown above)\n    (HBox, shown above)"; got != want {
		t.Errorf("cycle:\n got %q\nwant %q", got, want)
	}
	for i := range 40 {
		m.add(t, fmt.Sprint("d", i), fmt.Sprintf(`{"_model_name":"BoxModel","children":["IPY_MODEL_d%d"]}`, i+1))
	}
	got := mustRender(t, m, "d0")
	if lines := strings.Split(got, "\n"); len(lines) != MaxDepth+2 || strings.TrimSpace(lines[len(lines)-1]) != "..." {
		t.Errorf("deep tree: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	kids := make([]string, 0, 2*MaxLines)
	for range 2 * MaxLines {
		kids = append(kids, `"IPY_MODEL_cb"`)
	}
	m.add(t, "wide", `{"_model_name":"VBoxModel","children":[`+strings.Join(kids, ",")+`]}`)
	got = mustRender(t, m, "wide")
	if lines := strings.Split(got, "\n"); len(lines) != MaxLines+1 || lines[MaxLines] != fmt.Sprintf("[%d more lines not shown]", MaxLines+1) {
		t.Errorf("wide box: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// TestRenderTqdm: tqdm.notebook's HBox(HTML, FloatProgress, HTML) as the
// line tqdm prints in a terminal. The texts are as tqdm 4.70 sends them
// (figure spaces, HTML escapes); the bars are what tqdm.std.Bar draws for
// the same fraction.
func TestRenderTqdm(t *testing.T) {
	for _, c := range []struct {
		left, right string
		value, max  string
		want        string
	}{
		{"100%", "\u20075/5\u2007[00:00&lt;00:00,\u20071457.27it/s]", "5.0", "5.0", "100%|██████████| 5/5 [00:00<00:00, 1457.27it/s]"},
		{"\u2007\u20070%", "\u20070/5\u2007[00:00&lt;?,\u2007?it/s]", "0.0", "5.0", "  0%|          | 0/5 [00:00<?, ?it/s]"},
		{"load:\u2007\u200743%", "\u20073/7\u2007[00:01&lt;00:02,\u2007\u20072.00it/s]", "3.0", "7.0", "load:  43%|████▎     | 3/7 [00:01<00:02,  2.00it/s]"},
		{"\u200767%", "\u20072/3", "2", "3", " 67%|██████▋   | 2/3"},
		{"\u200799%", "\u200799/100", "99", "100", " 99%|█████████▉| 99/100"},
		{"", "5it\u2007[00:01,\u2007\u20073.33it/s]", "1", "1", "5it [00:01,  3.33it/s]"},
	} {
		m := models{}
		m.add(t, "l", `{"_model_name":"HTMLModel","value":`+quote(c.left)+`}`)
		m.add(t, "p", `{"_model_name":"FloatProgressModel","value":`+c.value+`,"min":0,"max":`+c.max+`,"bar_style":"success"}`)
		m.add(t, "r", `{"_model_name":"HTMLModel","value":`+quote(c.right)+`}`)
		m.add(t, "box", `{"_model_name":"HBoxModel","children":["IPY_MODEL_l","IPY_MODEL_p","IPY_MODEL_r"]}`)
		if got := mustRender(t, m, "box"); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestStripHTML(t *testing.T) {
	for in, want := range map[string]string{
		"<b>bold</b> &amp; x":                         "bold & x",
		"<p>one</p><p>two &lt;3</p>":                  "one\ntwo <3",
		"a<style>p{color:red}</style>b":               "ab",
		"<SCRIPT type='x'>evil()</SCRIPT>ok":          "ok",
		"unclosed <b":                                 "unclosed",
		"<a href='x>y' title=\"a>b\">link</a>":        "link",
		"  lots   of\t space ":                        "lots of space",
		"<script>never closed":                        "",
		"<div>x</div><div>y</div>&nbsp;<br/>&#x2603;": "x\ny\n☃",
		"\u2007\u20070%":                              "0%",
	} {
		if got := StripHTML(in); got != want {
			t.Errorf("StripHTML(%q) = %q, want %q", in, got, want)
		}
	}
}
