package kernel

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireBwrap stops t unless bwrap can create a sandbox here; with
// CI=true that is a failure, never a skip.
func requireBwrap(t *testing.T) {
	t.Helper()
	err := CheckSandbox(SandboxOptions{})
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and the sandbox is unavailable: %v", err)
	}
	t.Skipf("the sandbox is unavailable: %v", err)
}

// A sandboxed kernel runs code over ipc sockets, sees only its own
// processes, cannot write outside its directory, has no network, is
// interrupted by message with its namespace kept, has the memory limit, and
// its death is reported with its exit status or signal.
func TestSandboxedKernel(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	dir := t.TempDir()
	k := startKernel(t, Options{Dir: dir, Sandbox: &SandboxOptions{}, MemoryLimit: 4 << 30})
	if ci, err := ReadConnectionFile(k.ConnectionFile()); err != nil || ci.Transport != "ipc" {
		t.Fatalf("connection file: %+v, %v", ci, err)
	}
	out := func(code string) string {
		t.Helper()
		res := mustExecute(t, k, code)
		var b strings.Builder
		for _, o := range res.Outputs {
			b.WriteString(describe(o))
		}
		return b.String()
	}
	if got := out("import os\nx = 41\nopen('mine.txt', 'w').write('ok')\nos.getcwd()"); !strings.Contains(got, dir) {
		t.Errorf("cwd: %s, want %s", got, dir)
	}
	if b, err := os.ReadFile(dir + "/mine.txt"); err != nil || string(b) != "ok" {
		t.Errorf("file written in the working directory: %q, %v", b, err)
	}
	self, _ := os.Executable()
	got := out("import os\ncmds = [open(f'/proc/{p}/cmdline','rb').read() for p in os.listdir('/proc') if p.isdigit()]\nprint(len(cmds), b'|'.join(cmds))")
	if strings.Contains(got, self) || !strings.Contains(got, "ipykernel") {
		t.Errorf("processes seen in the sandbox: %s", got)
	}
	if got := out("try:\n    open('/etc/kernel-mcp-test', 'w')\nexcept OSError as e:\n    print(e.strerror)"); !strings.Contains(got, "Read-only file system") {
		t.Errorf("write outside: %s", got)
	}
	if got := out("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=5)\nexcept OSError as e:\n    print(type(e).__name__, e)"); !strings.Contains(got, "Network is unreachable") {
		t.Errorf("network: %s", got)
	}
	if got := out("import resource\nresource.getrlimit(resource.RLIMIT_AS)"); !strings.Contains(got, "(4294967296, 4294967296)") {
		t.Errorf("RLIMIT_AS: %s", got)
	}

	res, err := k.Execute(testCtx(t, time.Second), "import time\ntime.sleep(60)", ExecuteOptions{})
	if err == nil || !res.Interrupted || errors.Is(err, ErrInterruptIgnored) {
		t.Fatalf("deadline: interrupted %v, err %v", res != nil && res.Interrupted, err)
	}
	if got := out("x + 1"); !strings.Contains(got, "42") {
		t.Errorf("after the interrupt: %s", got)
	}

	_, err = k.Execute(testCtx(t, 60*time.Second), "import os\nos._exit(3)", ExecuteOptions{})
	var de *DiedError
	if !errors.As(err, &de) || de.ExitCode != 3 {
		t.Fatalf("os._exit(3): %#v", err)
	}
	if err := k.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = k.Execute(testCtx(t, 60*time.Second), "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", ExecuteOptions{})
	if !errors.As(err, &de) || de.SignalNo != 9 {
		t.Fatalf("SIGKILL: %#v", err)
	}
}

// A missing bwrap is one line naming the package.
func TestSandboxMissingBwrap(t *testing.T) {
	err := CheckSandbox(SandboxOptions{Bwrap: "/nonexistent/bwrap"})
	if err == nil || !strings.Contains(err.Error(), "bubblewrap") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("CheckSandbox: %v", err)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return
	}
	_, err = Start(testCtx(t, 10*time.Second), Options{Sandbox: &SandboxOptions{Bwrap: "/nonexistent/bwrap"}, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("Start: %v", err)
	}
}

// A bwrap that cannot create namespaces (here a stand-in that fails as
// bwrap does when unprivileged user namespaces are off) is one line
// saying so, with bwrap's own words.
func TestSandboxNoNamespaces(t *testing.T) {
	fake := t.TempDir() + "/bwrap"
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	err := CheckSandbox(SandboxOptions{Bwrap: fake})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cannot create the sandbox here") ||
		!strings.Contains(err.Error(), "No permissions to creating new namespace") || !strings.Contains(err.Error(), "user namespaces") {
		t.Fatalf("CheckSandbox: %v", err)
	}
}

// A sandboxed kernel has no capabilities, even when the server runs as
// root: it cannot unmount what hides the host's files, nor remount the
// root read-write.
func TestSandboxedKernelHasNoCapabilities(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	k := startKernel(t, Options{Dir: t.TempDir(), Sandbox: &SandboxOptions{}})
	res := mustExecute(t, k, `import subprocess
print([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])
for d in ['/root', '/home', '/tmp']:
    if subprocess.run(['umount', '-l', d], capture_output=True).returncode == 0:
        print('ESCAPE: unmounted', d)
if subprocess.run(['mount', '-o', 'remount,rw', '/'], capture_output=True).returncode == 0:
    print('ESCAPE: remounted / read-write')
try:
    open('/kernel-mcp-escape', 'w')
    print('ESCAPE: wrote /kernel-mcp-escape')
except OSError as e:
    print('write /:', e.strerror)`)
	var b strings.Builder
	for _, o := range res.Outputs {
		b.WriteString(describe(o))
	}
	got := b.String()
	if !strings.Contains(got, "0000000000000000") {
		t.Errorf("CapEff in the sandbox:\n%s", got)
	}
	if strings.Contains(got, "ESCAPE") {
		t.Errorf("the sandboxed kernel got out:\n%s", got)
	}
	if _, err := os.Stat("/kernel-mcp-escape"); err == nil {
		os.Remove("/kernel-mcp-escape")
		t.Error("the sandboxed kernel wrote /kernel-mcp-escape on the host")
	}
}

// The working directory must be given as itself: a path through a symlink
// is refused, since what is bound is the folder that was opened.
func TestSandboxDirMustBeItsRealPath(t *testing.T) {
	requireBwrap(t)
	real := t.TempDir()
	link := t.TempDir() + "/link"
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, link + "/."} {
		_, err := Start(testCtx(t, 30*time.Second), Options{Dir: dir, Sandbox: &SandboxOptions{}})
		if err == nil || !strings.Contains(err.Error(), "real path") {
			t.Errorf("Start in %s: %v", dir, err)
		}
	}
}

// A home under /tmp is private with /tmp: made a folder of its own in the
// sandbox, it would bring its parents into the private /tmp as folders
// the kernel could write.
func TestPrivateDirsHomeUnderTmp(t *testing.T) {
	for home, want := range map[string][]string{
		"/tmp/ci/integration/home": {"/tmp", "/var/tmp"},
		"/var/tmp/u":               {"/tmp", "/var/tmp"},
		"/srv/users/u":             {"/tmp", "/var/tmp", "/srv/users/u"},
		"/tmpfoo/u":                {"/tmp", "/var/tmp", "/tmpfoo/u"},
	} {
		t.Setenv("HOME", home)
		if got := privateDirs(); !slices.Equal(got, want) {
			t.Errorf("HOME=%s: privateDirs() = %v, want %v", home, got, want)
		}
	}
}
