package webview_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func requireWidgets(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("python3", "-c", "import ipywidgets").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and python3 lacks ipywidgets: %v %s", err, out)
		}
		t.Skipf("python3 lacks ipywidgets: %s", out)
	}
}

type widgetModel struct {
	ModelID     string         `json:"model_id"`
	State       map[string]any `json:"state"`
	BufferPaths [][]any        `json:"buffer_paths"`
	Buffers     []string       `json:"buffers"`
}

// The page reads the widget models' state, buffers split out; a change it
// posts reaches the kernel, and its echo comes back on the event stream.
// Only to a model the kernel holds, with a body of the expected shape.
func TestWidgetEndpoints(t *testing.T) {
	f := newFixture(t, false)
	requireWidgets(t)
	f.call(t, "run_code", map[string]any{"session_id": "w", "code": "import ipywidgets as w\ns = w.IntSlider(value=3, description='n')\nimg = w.Image(value=b'abc')\ndisplay(s, img)"})

	var got struct{ Models []widgetModel }
	f.getJSON(t, "/ui/api/sessions/w/widgets", &got)
	var slider, image *widgetModel
	for i, m := range got.Models {
		switch m.State["_model_name"] {
		case "IntSliderModel":
			slider = &got.Models[i]
		case "ImageModel":
			image = &got.Models[i]
		}
	}
	if slider == nil || image == nil {
		t.Fatalf("models: %+v", got.Models)
	}
	if slider.State["value"] != 3.0 || slider.State["_model_module"] != "@jupyter-widgets/controls" || len(slider.BufferPaths) != 0 {
		t.Errorf("slider: %+v", slider)
	}
	if len(image.BufferPaths) != 1 || len(image.BufferPaths[0]) != 1 || image.BufferPaths[0][0] != "value" ||
		len(image.Buffers) != 1 || image.Buffers[0] != "YWJj" || image.State["value"] != nil {
		t.Errorf("image's buffer: %+v", image)
	}

	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.web.URL+"/ui/api/events?token="+token, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if l, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(l, ":") {
		t.Fatalf("first line %q, %v", l, err)
	}

	path := "/ui/api/sessions/w/widgets/" + slider.ModelID
	if code, body := status(t, f.do(t, "POST", path, `{"state":{"value":7},"buffer_paths":[],"buffers":[]}`, nil)); code != 200 {
		t.Fatalf("update: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("no widget_update with value 7")
		}
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Kind    string       `json:"kind"`
			Session string       `json:"session_id"`
			Widget  *widgetModel `json:"widget"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == "widget_update" && ev.Session == "w" && ev.Widget != nil && ev.Widget.ModelID == slider.ModelID && ev.Widget.State["value"] == 7.0 {
			break
		}
	}
	if out := f.call(t, "run_code", map[string]any{"session_id": "w", "code": "s.value"}); !strings.Contains(out, "7") {
		t.Errorf("s.value after the page's update: %s", out)
	}

	for _, c := range []struct {
		name, path, body string
		header           map[string]string
		want             int
		says             string
	}{
		{"unknown comm", "/ui/api/sessions/w/widgets/nope", `{"state":{"value":1}}`, nil, 404, "no such widget"},
		{"missing session", "/ui/api/sessions/nope/widgets/" + slider.ModelID, `{"state":{"value":1}}`, nil, 404, ""},
		{"not JSON", path, `value=1`, nil, 400, "not the JSON"},
		{"unknown field", path, `{"state":{"value":1},"code":"1"}`, nil, 400, "unknown field"},
		{"custom without content", path, `{"method":"custom"}`, nil, 400, "needs content"},
		{"other method", path, `{"method":"request_state","state":{"value":1}}`, nil, 400, "request_state"},
		{"empty state", path, `{"state":{}}`, nil, 400, "empty"},
		{"paths without buffers", path, `{"state":{"value":1},"buffer_paths":[["value"]]}`, nil, 400, "buffer"},
		{"bad base64", path, `{"state":{"value":1},"buffer_paths":[["value"]],"buffers":["!!"]}`, nil, 400, "base64"},
		{"too big", path, `{"state":{"value":"` + strings.Repeat("x", 2<<20) + `"}}`, nil, 413, "over"},
		{"no token", path, `{"state":{"value":1}}`, map[string]string{"Authorization": ""}, 401, ""},
		{"cross-origin", path, `{"state":{"value":1}}`, map[string]string{"Origin": "http://evil.example"}, 403, ""},
		{"foreign host", path, `{"state":{"value":1}}`, map[string]string{"Host": "evil.example"}, 403, ""},
	} {
		req, _ := http.NewRequestWithContext(f.ctx, "POST", f.web.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		code, body := status(t, resp)
		if code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d %q", c.name, code, body, c.want, c.says)
		}
	}
	if out := f.call(t, "run_code", map[string]any{"session_id": "w", "code": "s.value"}); !strings.Contains(out, "7") {
		t.Errorf("s.value after the refused updates: %s", out)
	}
}

// Under --ui-readonly the page shows widgets but cannot change them.
func TestWidgetUpdateReadOnly(t *testing.T) {
	f := newFixture(t, true)
	requireWidgets(t)
	f.call(t, "run_code", map[string]any{"session_id": "ro", "code": "import ipywidgets as w\ns = w.IntSlider(value=3)\ns"})
	var got struct{ Models []widgetModel }
	f.getJSON(t, "/ui/api/sessions/ro/widgets", &got)
	if len(got.Models) == 0 {
		t.Fatal("no models")
	}
	for _, m := range got.Models {
		code, body := status(t, f.do(t, "POST", "/ui/api/sessions/ro/widgets/"+m.ModelID, `{"state":{"value":9}}`, nil))
		if code != 403 || !strings.Contains(body, "read-only") {
			t.Errorf("update under read-only: %d %s", code, body)
		}
	}
	if out := f.call(t, "run_code", map[string]any{"session_id": "ro", "code": "s.value"}); !strings.Contains(out, "3") {
		t.Errorf("s.value: %s", out)
	}
}
