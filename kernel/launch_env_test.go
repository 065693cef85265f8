package kernel

import (
	"slices"
	"testing"
)

// A Windows kernel gets, as jupyter_client gives it, the parent process
// handle in JPY_PARENT_PID and the interrupt event in JPY_INTERRUPT_EVENT
// and IPY_INTERRUPT_EVENT, as decimal handle values, and inherits exactly
// those two handles; values the server inherited are dropped, whatever
// their case.
func TestWindowsLaunch(t *testing.T) {
	env := []string{"PATH=C:\\Python", "jpy_parent_pid=4242", "IPY_INTERRUPT_EVENT=7", "JPY_INTERRUPT_EVENTS=keep", "X=JPY_PARENT_PID=1"}
	got, handles := windowsLaunch(env, 0x1a4, 0x2b8)
	want := []string{"PATH=C:\\Python", "JPY_INTERRUPT_EVENTS=keep", "X=JPY_PARENT_PID=1",
		"JPY_PARENT_PID=420", "JPY_INTERRUPT_EVENT=696", "IPY_INTERRUPT_EVENT=696"}
	if !slices.Equal(got, want) {
		t.Errorf("env:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(handles, []uintptr{0x1a4, 0x2b8}) {
		t.Errorf("handles = %#x, want [0x1a4 0x2b8]", handles)
	}
	if len(env) != 5 || env[1] != "jpy_parent_pid=4242" {
		t.Errorf("the server's environment was changed: %q", env)
	}

	// Without handles, nothing is added or inherited.
	got, handles = windowsLaunch([]string{"A=1", "JPY_PARENT_PID=3"}, 0, 0)
	if !slices.Equal(got, []string{"A=1"}) || handles != nil {
		t.Errorf("no handles: env %q, handles %v", got, handles)
	}
}
