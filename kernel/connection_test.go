//go:build unix

package kernel

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestNewConnectionInfo(t *testing.T) {
	ci, err := NewConnectionInfo()
	if err != nil {
		t.Fatal(err)
	}
	if ci.Transport != "tcp" || ci.IP != "127.0.0.1" || ci.SignatureScheme != "hmac-sha256" {
		t.Errorf("transport %q, ip %q, scheme %q", ci.Transport, ci.IP, ci.SignatureScheme)
	}
	key, err := hex.DecodeString(ci.Key)
	if err != nil || len(key) != 32 {
		t.Errorf("key %q is not 32 hex-encoded bytes (%v)", ci.Key, err)
	}
	seen := map[int]bool{}
	for _, p := range []int{ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort} {
		if p <= 0 || p > 65535 || seen[p] {
			t.Errorf("bad or repeated port %d in %+v", p, ci)
		}
		seen[p] = true
	}
	if got, want := ci.endpoint(ci.ShellPort), bufferedTCP+"://127.0.0.1:"+strconv.Itoa(ci.ShellPort); got != want {
		t.Errorf("endpoint = %q, want %q", got, want)
	}
}

// TestConnectionFilePermissions checks that the key is readable by the
// owner only: a 0700 runtime dir holding a 0600 file.
func TestConnectionFilePermissions(t *testing.T) {
	base := filepath.Join(t.TempDir(), "not", "yet")
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", base)
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir, err := newRuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Remove()
	if filepath.Dir(dir.path) != base || !strings.HasPrefix(filepath.Base(dir.path), "kernel-mcp-") {
		t.Errorf("runtime dir %s is not kernel-mcp-* in %s", dir.path, base)
	}
	ci, err := NewConnectionInfo()
	if err != nil {
		t.Fatal(err)
	}
	ci.KernelName = "python3"
	file, err := dir.writeConnectionFile(ci)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir.path, 0o700}, {file, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.want)
		}
	}
	got, err := ReadConnectionFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != ci {
		t.Errorf("read back %+v, wrote %+v", got, ci)
	}
	if err := dir.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir.path); !os.IsNotExist(err) {
		t.Errorf("runtime dir still there after Remove: %v", err)
	}
}

func TestReadConnectionFile(t *testing.T) {
	t.Parallel()
	const full = `"ip": "127.0.0.1", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": "k", "signature_scheme": "hmac-sha256"`
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// No transport means tcp, as jupyter_client reads it.
	ci, err := ReadConnectionFile(write("ok.json", `{`+full+`}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: 1, IOPubPort: 2, StdinPort: 3, ControlPort: 4, HBPort: 5, Key: "k", SignatureScheme: "hmac-sha256"}
	if ci != want {
		t.Errorf("got %+v, want %+v", ci, want)
	}

	for _, c := range []struct {
		name, path, wantErr string
	}{
		{"missing", filepath.Join(dir, "absent.json"), "read connection file"},
		{"not JSON", write("bad.json", `{"ip": `), "parse connection file"},
		{"udp", write("udp.json", `{"transport": "udp", `+full+`}`), `transport "udp" is not supported (only tcp and ipc)`},
		{"no port", write("noport.json", `{"ip": "127.0.0.1", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "key": "k"}`), "lacks an ip or a port"},
		{"no ip", write("noip.json", `{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5}`), "lacks an ip or a port"},
		{"a folder", dir, "is not a regular file"},
		{"too large", write("huge.json", `{`+full+`, "pad": "`+strings.Repeat("x", maxConnectionFile)+`"}`), "too large for a connection file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadConnectionFile(c.path)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("err = %v, want one mentioning %q", err, c.wantErr)
			}
		})
	}
}

// A runtime dir whose owner process is gone (a server killed with SIGKILL)
// is removed by the next process that makes one there; a live owner's is not.
func TestStaleRuntimeDirsAreSwept(t *testing.T) {
	base := t.TempDir()
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", base)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, fmt.Sprintf("kernel-mcp-%d-123", dead.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("kernel-mcp-%d-456", os.Getppid()))
	other := filepath.Join(base, "kernel-mcp-notapid")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := newRuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale dir of dead pid %d kept: %v", dead.Process.Pid, err)
	}
	for _, keep := range []string{live, other} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
}

// TestFreePortsNotReused: within one process a port is not handed out
// twice in a row, even though the OS may offer a just-released port again
// before the kernel it was meant for has bound it.
func TestFreePortsNotReused(t *testing.T) {
	seen := map[int]int{}
	for i := range 200 {
		ci, err := NewConnectionInfo()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort} {
			if prev, dup := seen[p]; dup {
				t.Fatalf("port %d handed out by call %d and again by call %d", p, prev, i)
			}
			seen[p] = i
		}
	}
}

// TestBoundPorts reads back the file a kernel rewrites with the ports it
// bound: until it holds five ports and our key, it is not ready.
func TestBoundPorts(t *testing.T) {
	want := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: "k1", SignatureScheme: "hmac-sha256", KernelName: "python3"}
	path := filepath.Join(t.TempDir(), "kernel.json")
	full := `{"transport":"tcp","ip":"127.0.0.1","shell_port":1001,"iopub_port":1002,"stdin_port":1003,"control_port":1004,"hb_port":1005,"key":"k1","signature_scheme":"hmac-sha256"}`
	for name, content := range map[string]string{
		"empty (truncated, not yet written)": "",
		"partial write":                      full[:60],
		"ports still 0":                      `{"ip":"127.0.0.1","shell_port":0,"iopub_port":0,"stdin_port":0,"control_port":0,"hb_port":0,"key":"k1"}`,
		"one port missing":                   strings.Replace(full, `"hb_port":1005,`, "", 1),
		"another key":                        strings.Replace(full, `"k1"`, `"k2"`, 1),
		"another ip":                         strings.Replace(full, `127.0.0.1`, `0.0.0.0`, 1),
		"port out of range":                  strings.Replace(full, `1005`, `70000`, 1),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if ci, ok := boundPorts(path, want); ok {
			t.Errorf("%s: accepted as %+v", name, ci)
		}
	}
	if _, ok := boundPorts(filepath.Join(t.TempDir(), "missing.json"), want); ok {
		t.Error("a missing file was accepted")
	}
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	ci, ok := boundPorts(path, want)
	got := []int{ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort}
	if !ok || fmt.Sprint(got) != "[1001 1002 1003 1004 1005]" || ci.Key != "k1" || ci.KernelName != "python3" || ci.SignatureScheme != "hmac-sha256" {
		t.Errorf("full file: ok=%v %+v", ok, ci)
	}
}

// A relative KERNEL_MCP_RUNTIME_DIR gives an absolute runtime dir: the
// connection file, the ipc sockets and a sandbox's bind all name it.
func TestRuntimeDirAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", "rel/runtime")
	dir, err := newRuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Remove()
	if !filepath.IsAbs(dir.path) {
		t.Errorf("runtime dir %q is relative", dir.path)
	}
}
