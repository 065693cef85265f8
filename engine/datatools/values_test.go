package datatools

import (
	"encoding/json"
	"strings"
	"testing"
)

// get_value's text holds the value (clients that show the model only the
// text need it), cut past the output limit with a note naming head.
func TestGetValueText(t *testing.T) {
	out := Value{Type: "list", Shape: "5 values", Raw: json.RawMessage(`[1,2,3,4,5]`)}
	if got := out.Text("xs", 100); got != "xs (list, 5 values):\n[1,2,3,4,5]" {
		t.Errorf("short value: %q", got)
	}
	got := out.Text("xs", 4)
	if !strings.HasPrefix(got, "xs (list, 5 values):\n[1,2\n") || !strings.Contains(got, "11 characters of JSON, cut at 4") || !strings.Contains(got, "head") {
		t.Errorf("cut value: %q", got)
	}
}

// The cut counts characters, and never splits one.
func TestGetValueTextCutsCharacters(t *testing.T) {
	got := Value{Type: "str", Raw: json.RawMessage(`"ééééé"`)}.Text("s", 3)
	if !strings.HasPrefix(got, "s (str):\n\"éé\n") || !strings.Contains(got, "7 characters of JSON, cut at 3") {
		t.Errorf("cut of a non-ASCII value: %q", got)
	}
}
