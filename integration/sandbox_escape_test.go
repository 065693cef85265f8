//go:build linux

package integration

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The escapes a security review found in --sandbox, each tried as the
// server's user would meet it: a server running as root (CI's case) and
// one running as an unprivileged user (nobody).

// sandboxLeg is the user a sandboxed server runs as in these tests.
type sandboxLeg struct {
	name     string
	uid, gid int
	// base is a folder of the leg's own, that its user can reach: the
	// binary, homes and state dirs go in it.
	base   string
	binary string
	python string // the interpreter, given with --python
	// showUnderRoot is the interpreter's prefix below /root, shown to an
	// unprivileged server (root's home is 0700) in a mount namespace of
	// its own; empty when nothing needs showing.
	showUnderRoot string
}

// sandboxLegs returns the legs to run: as root, root and nobody; as
// anyone else, that user only. The unprivileged leg needs user namespaces
// (bwrap creates one) and util-linux's unshare and setpriv; without them
// it fails under CI=true and is skipped elsewhere, saying why.
func sandboxLegs(t *testing.T) []sandboxLeg {
	t.Helper()
	requireBwrap(t)
	requireKernel(t)
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	python, _ := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	newLeg := func(name string, uid, gid int) sandboxLeg {
		base, err := os.MkdirTemp("", "kernel-mcp-leg-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		l := sandboxLeg{name: name, uid: uid, gid: gid, base: base, binary: binary, python: python}
		if uid != os.Geteuid() {
			l.binary = filepath.Join(base, "kernel-mcp")
			if err := copyFile(binary, l.binary); err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel("/root", filepath.Dir(filepath.Dir(python))); err == nil && !strings.HasPrefix(rel, "..") {
				l.showUnderRoot = rel
			}
		}
		return l
	}
	if os.Geteuid() != 0 {
		t.Logf("not root: the root leg is not run")
		return []sandboxLeg{newLeg("user", os.Geteuid(), os.Getegid())}
	}
	legs := []sandboxLeg{newLeg("root", 0, 0)}
	if why := unprivilegedUnavailable(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the unprivileged leg cannot run: %s", why)
		}
		t.Logf("the unprivileged leg is skipped: %s", why)
		return legs
	}
	return append(legs, newLeg("nobody", 65534, 65534))
}

// unprivilegedUnavailable says why a server cannot be run as nobody here,
// or "".
func unprivilegedUnavailable() string {
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return fmt.Sprintf("user namespaces are off (/proc/sys/user/max_user_namespaces: %q, %v)", b, err)
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "util-linux's " + tool + " is missing"
		}
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("bwrap run as nobody cannot create a user namespace: %v: %s", err, out)
	}
	return ""
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// dir makes a folder in the leg's base, owned by the leg's user.
func (l sandboxLeg) dir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(l.base, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	l.chown(t, d)
	return d
}

// file writes a file owned by the leg's user.
func (l sandboxLeg) file(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	l.chown(t, path)
}

func (l sandboxLeg) chown(t *testing.T, p string) {
	t.Helper()
	if l.uid != os.Geteuid() {
		if err := os.Lchown(p, l.uid, l.gid); err != nil {
			t.Fatal(err)
		}
	}
}

// command is the server run as the leg's user in dir, with HOME=home. The
// unprivileged server runs in a mount namespace of its own where root's
// home is an empty folder showing only the interpreter's prefix.
func (l sandboxLeg) command(dir, home string, args ...string) *exec.Cmd {
	args = append([]string{"--python", l.python}, args...)
	env := []string{"PATH=" + filepath.Dir(l.python) + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CI=" + os.Getenv("CI")}
	var cmd *exec.Cmd
	if l.uid == os.Geteuid() {
		cmd = exec.Command(l.binary, args...)
	} else {
		script := `set -e
if [ -n "$SHOW" ]; then
  T=$(mktemp -d)
  mount --bind /root "$T"
  mount -t tmpfs -o mode=755 tmpfs /root
  mkdir -p "/root/$SHOW"
  mount --bind "$T/$SHOW" "/root/$SHOW"
  umount -l "$T"
  rmdir "$T"
fi
exec setpriv --reuid=` + strconv.Itoa(l.uid) + ` --regid=` + strconv.Itoa(l.gid) + ` --clear-groups --inh-caps=-all "$@"`
		cmd = exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", l.binary}, args...)...)
		env = append(env, "SHOW="+l.showUnderRoot)
	}
	cmd.Dir, cmd.Env = dir, env
	return cmd
}

// startServer starts the leg's server over stdio and connects a client.
func (l sandboxLeg) startServer(t *testing.T, dir, home string, args ...string) *server {
	t.Helper()
	return connectCmd(t, l.command(dir, home, args...), mcp.NewClient(&mcp.Implementation{Name: "sandbox-escape-test", Version: "1"}, nil))
}

// startHTTP starts the leg's server over streamable HTTP and returns its URL.
func (l sandboxLeg) startHTTP(t *testing.T, home string, args ...string) string {
	t.Helper()
	// The server is setpriv's exec, so the pid is the server's: the
	// cleanup's signal reaches it.
	return startHTTPCmd(t, l.command(l.base, home, append([]string{"--transport", "streamable-http", "--port", "0"}, args...)...))
}

// legs runs f once per leg, as subtests.
func forEachLeg(t *testing.T, f func(t *testing.T, l sandboxLeg)) {
	for _, l := range sandboxLegs(t) {
		t.Run(l.name, func(t *testing.T) { f(t, l) })
	}
}

// A sandboxed kernel has no capabilities, even under a server running as
// root: it cannot unmount what hides the home directory, nor remount the
// root read-write and write to the host.
func TestSandboxKernelHasNoCapabilities(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		home := l.dir(t, "home")
		secret := filepath.Join(home, "secret.txt")
		l.file(t, secret, "HOME-SECRET", 0o600)
		escape := "/kernel-mcp-escape-" + l.name
		s := l.startServer(t, l.base, home, "--sandbox", "--state-dir", l.dir(t, "state"), "--pool-size", "0")
		code := fmt.Sprintf(`import subprocess
print([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])
for cmd in (['umount', '-l', %[1]q], ['mount', '-o', 'remount,rw', '/']):
    r = subprocess.run(cmd, capture_output=True, text=True)
    print('ESCAPE' if r.returncode == 0 else 'refused', cmd, r.stderr.strip())
for f in (%[2]q,):
    try:
        print('ESCAPE read', open(f).read())
    except OSError as e:
        print('read:', e.strerror)
try:
    open(%[3]q, 'w').write('x')
    print('ESCAPE wrote', %[3]q)
except OSError as e:
    print('write:', e.strerror)`, home, secret, escape)
		_, out := s.run("caps", code)
		t.Logf("%s", out.Stdout)
		if !strings.HasPrefix(out.Stdout, "0000000000000000\n") {
			t.Errorf("CapEff in the sandbox is not 0: %s", out.Stdout)
		}
		if strings.Contains(out.Stdout, "ESCAPE") || strings.Contains(out.Stdout, "HOME-SECRET") {
			t.Errorf("the kernel got out:\n%s", out.Stdout)
		}
		if _, err := os.Stat(escape); err == nil {
			os.Remove(escape)
			t.Errorf("the sandboxed kernel wrote %s on the host", escape)
		}
	})
}

// Another session's code swaps the victim's cwd for a symlink to a host
// folder, back and forth, while the victim's kernel restarts and new
// sessions start in that cwd: no kernel ever sees the host folder, and no
// kernel inherits a directory fd it could walk out of its mounts with.
func TestSandboxCwdSwapRace(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		home := l.dir(t, "home")
		host := l.dir(t, "home/hostdir")
		l.file(t, filepath.Join(host, "marker.txt"), "HOST-MARKER", 0o644)
		state := l.dir(t, "state")
		s := l.startServer(t, l.base, home, "--sandbox", "--state-dir", state, "--pool-size", "0")
		if res := s.call("create_session", map[string]any{"session_id": "victim", "cwd": "proj"}); res.IsError {
			t.Fatal(text(res))
		}
		proj := filepath.Join(state, "work", "proj")
		l.file(t, filepath.Join(proj, "own.txt"), "OWN", 0o644)
		const look = `import os
print(sorted(os.listdir('.')))
for f in ('marker.txt', 'own.txt'):
    try:
        print(f, open(f).read())
    except OSError as e:
        print(f, e.strerror)
# The kernel's own IPython profile folder is left out: SQLite opens it for
# a moment to sync the history database (seen once in CI).
own = os.path.realpath(get_ipython().profile_dir.location)
print('dirfds', [d for d in (os.readlink(f'/proc/self/fd/{f}') for f in os.listdir('/proc/self/fd') if os.path.isdir(f'/proc/self/fd/{f}')) if not d.startswith('/proc') and d != own])`
		if _, out := s.run("victim", look); !strings.Contains(out.Stdout, "own.txt OWN") || !strings.Contains(out.Stdout, "dirfds []") {
			t.Fatalf("before the swaps the victim sees:\n%s", out.Stdout)
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var swaps int
		wg.Add(1)
		go func() {
			defer wg.Done()
			away := proj + ".away"
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := os.Rename(proj, away); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
				os.Symlink(host, proj)
				time.Sleep(2 * time.Millisecond)
				os.Remove(proj)
				if err := os.Rename(away, proj); err != nil {
					t.Errorf("swap back: %v", err)
					return
				}
				swaps++
				time.Sleep(time.Millisecond)
			}
		}()
		check := func(what, stdout string) {
			t.Helper()
			if strings.Contains(stdout, "HOST-MARKER") || strings.Contains(stdout, "'marker.txt'") || (strings.Contains(stdout, "dirfds") && !strings.Contains(stdout, "dirfds []")) {
				t.Errorf("%s: the kernel sees:\n%s", what, stdout)
			}
		}
		started := 0
		for i := range 8 {
			if res := s.call("reset_run_context", map[string]any{"session_id": "victim"}); res.IsError {
				t.Logf("reset_run_context %d: %s", i, text(res))
			}
			// A start refused (the cwd was a symlink just then) is an
			// error result; the next run starts the kernel again.
			res := s.call("run_code", map[string]any{"session_id": "victim", "code": look})
			check(fmt.Sprintf("the victim after reset %d", i), text(res))
			id := fmt.Sprintf("new%d", i)
			if res := s.call("create_session", map[string]any{"session_id": id, "cwd": "proj"}); res.IsError {
				t.Logf("create_session during the swaps: %s", text(res))
				continue
			}
			started++
			res = s.call("run_code", map[string]any{"session_id": id, "code": look})
			check("a session started during the swaps", text(res))
			s.call("delete_session", map[string]any{"session_id": id})
		}
		close(stop)
		wg.Wait()
		t.Logf("%d swaps; %d of 8 sessions started during them", swaps, started)
		if st, err := os.Lstat(proj); err != nil || !st.IsDir() {
			t.Fatalf("proj after the swaps is not the folder: %v, %v", st, err)
		}
	})
}

// --sandbox-allow over the parent of the tokens file and the state
// directory shows neither: bob's kernel and bob's run_file and load_data
// reach neither the tokens nor alice's history.
func TestSandboxAllowParentKeepsHidden(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
		shared := l.dir(t, "shared")
		tokens := filepath.Join(shared, "tokens")
		l.file(t, tokens, "alice "+aliceToken+"\nbob "+bobToken+"\n", 0o600)
		l.file(t, filepath.Join(shared, "data.csv"), "a,b\n1,2\n", 0o644)
		state := l.dir(t, "shared/state")
		url := l.startHTTP(t, l.dir(t, "home"), "--sandbox", "--sandbox-allow", shared, "--tokens-file", tokens, "--state-dir", state, "--pool-size", "0")
		alice := connectUser(t, url, aliceToken)
		bob := connectUser(t, url, bobToken)
		if res := alice.call("run_code", map[string]any{"code": "print('ALICE-HISTORY')"}); res.IsError {
			t.Fatal(text(res))
		}
		var aliceFiles []string
		filepath.Walk(filepath.Join(state, "users", "alice"), func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "ALICE-HISTORY") {
					aliceFiles = append(aliceFiles, p)
				}
			}
			return nil
		})
		if len(aliceFiles) == 0 {
			t.Fatal("alice's history is not on disk")
		}
		leaked := func(s string) bool {
			return strings.Contains(s, aliceToken) || strings.Contains(s, bobToken) || strings.Contains(s, "ALICE-HISTORY")
		}
		if res := bob.call("run_code", map[string]any{"code": fmt.Sprintf("open(%q).read()", filepath.Join(shared, "data.csv"))}); res.IsError || !strings.Contains(text(res), "1,2") {
			t.Errorf("bob reads the allowed folder: %s", text(res))
		}
		for _, f := range append([]string{tokens}, aliceFiles...) {
			res := bob.call("run_code", map[string]any{"code": fmt.Sprintf("print(repr(open(%q).read()))", f)})
			if leaked(text(res)) || !res.IsError {
				t.Errorf("bob's kernel read %s: %s", f, text(res))
			}
			for _, tool := range []string{"run_file", "load_data"} {
				res := bob.call(tool, map[string]any{"path": f})
				if !res.IsError || leaked(text(res)) || !strings.Contains(text(res), "hides") {
					t.Errorf("bob's %s(%s): %s", tool, f, text(res))
				}
			}
		}
		if res := bob.call("run_code", map[string]any{"code": fmt.Sprintf("import os; os.listdir(%q)", filepath.Join(state, "users"))}); text(res) != "['bob']" {
			t.Errorf("bob lists the users folder: %s", text(res))
		}
	})
}

// A cwd through a symlink that leads out is refused before anything is
// created: no folder appears outside.
func TestSandboxCwdSymlinkCreatesNothing(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		outside := l.dir(t, "outside")
		state := l.dir(t, "state")
		s := l.startServer(t, l.base, l.dir(t, "home"), "--sandbox", "--state-dir", state, "--pool-size", "0")
		link := filepath.Join(state, "work", "out")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		l.chown(t, link)
		res := s.call("create_session", map[string]any{"session_id": "s", "cwd": "out/made/deeper"})
		if !res.IsError || !strings.Contains(text(res), "leads outside") {
			t.Errorf("create_session through the link: %s", text(res))
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("folders created outside the work directory: %v", ents)
		}
		if res := s.call("create_session", map[string]any{"session_id": "t", "cwd": "in/sub"}); res.IsError {
			t.Errorf("create_session inside: %s", text(res))
		}
	})
}

// A relative --state-dir works: it is made absolute against the directory
// the server starts in before bwrap sees it.
func TestSandboxRelativeStateDir(t *testing.T) {
	l := sandboxLegs(t)[0]
	s := l.startServer(t, l.base, l.dir(t, "home"), "--sandbox", "--state-dir", "state11", "--pool-size", "0")
	res, out := s.run("rel", "import os\nopen('here.txt', 'w').write('x')\nos.getcwd()")
	if res.IsError || out.Status != "ok" {
		t.Fatalf("run with a relative state dir: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(l.base, "state11", "work", "here.txt")); err != nil {
		t.Errorf("the kernel's file is not in the state dir's work folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.base, "state11")); errors.Is(err, os.ErrNotExist) {
		t.Error("no state11 folder")
	}
}
