//go:build unix

package kernel

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireWidgets stops t unless python3 has ipywidgets and tqdm; with
// CI=true their absence fails it.
func requireWidgets(t *testing.T) {
	t.Helper()
	requireIPyKernel(t)
	if out, err := exec.Command("python3", "-c", "import ipywidgets, tqdm").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and python3 lacks ipywidgets or tqdm: %v %s", err, out)
		}
		t.Skipf("python3 lacks ipywidgets or tqdm: %s", out)
	}
}

func child(t *testing.T, w *Widgets, parent Widget, i int) Widget {
	t.Helper()
	children, _ := parent.State["children"].([]any)
	if i >= len(children) {
		t.Fatalf("%s has %d children", parent.ModelName(), len(children))
	}
	ref, _ := children[i].(string)
	return mustWidget(t, w, strings.TrimPrefix(ref, "IPY_MODEL_"))
}

// TestWidgetsRealKernel follows the widgets of a real ipykernel: a slider's
// state, a tqdm.auto loop's last state, interact's Output capture, a
// comm_msg sent from here changing the kernel's widget, and a restart
// forgetting everything.
func TestWidgetsRealKernel(t *testing.T) {
	requireWidgets(t)
	k := startKernel(t, Options{})
	w := k.Widgets()

	res := mustExecute(t, k, "import ipywidgets as w\ns = w.IntSlider(value=3, min=0, max=10, description='n')\ns")
	id := viewModel(t, res)
	s := mustWidget(t, w, id)
	if s.ModelName() != "IntSliderModel" || s.State["value"] != json.Number("3") || s.State["description"] != "n" {
		t.Fatalf("slider %v", s.State)
	}

	res = mustExecute(t, k, "from tqdm.auto import tqdm\nfor i in tqdm(range(5)): pass")
	box := mustWidget(t, w, viewModel(t, res))
	left, bar, right := child(t, w, box, 0), child(t, w, box, 1), child(t, w, box, 2)
	if left.State["value"] != "100%" || bar.State["value"] != json.Number("5.0") || bar.State["max"] != json.Number("5.0") || bar.State["bar_style"] != "success" {
		t.Fatalf("tqdm's last state: %q, %v/%v %q", left.State["value"], bar.State["value"], bar.State["max"], bar.State["bar_style"])
	}
	if r, _ := right.State["value"].(string); !strings.HasPrefix(r, "\u20075/5\u2007[") {
		t.Fatalf("tqdm's suffix %q", r)
	}

	res = mustExecute(t, k, "def f(x):\n    print('x is', x)\n    return x * 2\nw.interact(f, x=5);")
	if len(res.Outputs) != 1 {
		t.Fatalf("interact's cell outputs %q", describeAll(res.Outputs))
	}
	out := child(t, w, mustWidget(t, w, viewModel(t, res)), 1)
	if got := describeAll(out.Outputs); !slices.Equal(got, []string{`stream stdout "x is 5\n"`, "display_data 10"}) {
		t.Fatalf("interact's Output captured %q", got)
	}

	// A frontend's change: the kernel's widget takes it, and its echo
	// updates the state here before the next execution ends.
	if err := k.SendCommMsg(testCtx(t, 30*time.Second), id, map[string]any{"method": "update", "state": map[string]any{"value": 9}, "buffer_paths": []any{}}); err != nil {
		t.Fatal(err)
	}
	wantOutputs(t, mustExecute(t, k, "print(s.value)"), `stream stdout "9\n"`)
	if s := mustWidget(t, w, id); s.State["value"] != json.Number("9") {
		t.Fatalf("after the comm_msg the state says value %v", s.State["value"])
	}

	// A change to interact's slider from here reruns the function in the
	// kernel, for the comm_msg: no execution of ours waits for its
	// output, and the Output widget still gets it.
	slider := child(t, w, mustWidget(t, w, viewModel(t, res)), 0)
	if err := k.SendCommMsg(testCtx(t, 30*time.Second), slider.ModelID, map[string]any{"method": "update", "state": map[string]any{"value": 7}, "buffer_paths": []any{}}); err != nil {
		t.Fatal(err)
	}
	mustExecute(t, k, "pass")
	if got := describeAll(mustWidget(t, w, out.ModelID).Outputs); !slices.Equal(got, []string{`stream stdout "x is 7\n"`, "display_data 14"}) {
		t.Fatalf("interact's Output after the slider moved: %q", got)
	}

	if err := k.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	if w.Len() != 0 {
		t.Fatalf("%d models after a restart", w.Len())
	}
	res = mustExecute(t, k, "import ipywidgets as w\nw.Checkbox(value=True)")
	if c := mustWidget(t, w, viewModel(t, res)); c.State["value"] != true {
		t.Fatalf("checkbox after the restart: %v", c.State)
	}
}
