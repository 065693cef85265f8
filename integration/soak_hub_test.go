//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// The soak's hub leg: kernel-mcp as a JupyterHub service with
// --hub-kernels (the harness of integration/hubkernels_test.go), alice and
// bob signed in through the hub with go-sdk's OAuth client, each session's
// kernel in that person's own single-user server. Among the faults, a
// person's server is SIGKILLed (a crash: the hub still calls it ready
// until its spawner polls) or stopped through the hub's API (as an admin
// or the idle culler would): that person's session loses its variables and
// nothing else, the other person's session goes on untouched (the
// invariants hold for it with no excuse), and the next calls start the
// server again.

// addHubLeg starts the hub and its kernel-mcp, signs alice and bob in, and
// adds a session of each to the soak.
func (s *soak) addHubLeg(common []string) {
	t := s.t
	requireHubKernelParts(t)
	hs := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{
		flags: append([]string{"--hub-kernels"}, common...), config: hubKernelsConfig})
	u, err := url.Parse(hs.base)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	// Not one of s.servers: the hub runs it, and the soak neither restarts
	// it nor samples it.
	srv := &soakServer{name: "hub", http: true, port: port, log: &lockedBuffer{}}
	s.hub, s.hubSrv = hs, srv
	for _, user := range []string{"alice", "bob"} {
		cs, h, err := connectAs(t, hs.mcpURL, newPerson(t, user, "hub-password"), dcr(), &http.Transport{}, nil, nil)
		if err != nil {
			t.Fatalf("hub leg: signing %s in: %v", user, err)
		}
		cs.Close()
		sl := &slot{name: "hub-" + user, user: user, srv: srv, oauth: h}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = s.connect(ctx, sl)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s.slots = append(s.slots, sl)
	}
}

// hubFault kills or stops one person's single-user server under their
// session, once it runs (a fault before may have stopped it).
func (s *soak) hubFault(kind string) {
	ws := s.workersOf(s.hubSrv)
	w := ws[s.rng.Intn(len(ws))]
	user := w.primary.user
	// A server a fault stopped runs again once a call started it: wait
	// for that (the worker goes on calling), so that each fault meets a
	// running server.
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; {
		p, ready, err := hubServerState(s.hub, user)
		if err != nil {
			s.fail(invProtocol, fmt.Sprintf("%s: asking the hub about %s's server: %v", kind, user, err))
			return
		}
		if ready {
			pid = p
			break
		}
		if time.Now().After(deadline) {
			s.t.Logf("soak: %s: %s's server did not run again within 30 s; nothing to do", kind, user)
			return
		}
		time.Sleep(250 * time.Millisecond) // polling the hub's API: it sends no event
	}
	w.impaired.Store(true)
	w.epoch.Add(1)
	switch kind {
	case "hub_server_kill":
		if pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	case "hub_server_stop":
		status, body, err := hubRequest(http.MethodDelete, s.hub.apiURL+"/users/"+user+"/server")
		if err != nil || status >= 300 && status != http.StatusBadRequest {
			// 400: a start or stop is pending already.
			s.fail(invProtocol, fmt.Sprintf("%s: stopping %s's server: %d %s %v", kind, user, status, body, err))
		}
	}
	// The session's kernel died with the server: the calls that meet its
	// death are the fault's, until a run works again.
	w.epoch.Add(1)
	w.recoverGW.Store(true)
	s.count(s.faults, kind)
}

// hubServerState is the pid of user's default server (from the spawner's
// state, which an admin may read) and whether the hub calls it ready.
func hubServerState(hs *hubSetup, user string) (int, bool, error) {
	status, body, err := hubRequest(http.MethodGet, hs.apiURL+"/users/"+user)
	if err != nil {
		return 0, false, err
	}
	if status != http.StatusOK {
		return 0, false, fmt.Errorf("%d %s", status, body)
	}
	var m struct {
		Servers map[string]struct {
			Ready   bool   `json:"ready"`
			Pending string `json:"pending"`
			State   struct {
				Pid int `json:"pid"`
			} `json:"state"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return 0, false, err
	}
	sv := m.Servers[""]
	return sv.State.Pid, sv.Ready && sv.Pending == "", nil
}

// hubRequest asks the hub's API as the test's admin service.
func hubRequest(method, u string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "token admin-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// hubLeaks checks, once the soak is over, that each person's server runs
// no kernel beyond their one session's: a kernel kernel-mcp started and
// lost track of (across a server's death or a restart of its own) would
// stay there, unseen, until the server stops.
func (s *soak) hubLeaks() {
	for _, w := range s.workersOf(s.hubSrv) {
		user := w.primary.user
		_, ready, err := hubServerState(s.hub, user)
		if err != nil || !ready {
			continue // stopped by a last fault: nothing can be left in it
		}
		s.check(invLeak)
		status, body, err := hubRequest(http.MethodGet, s.hub.hubURL+"/user/"+user+"/api/kernels")
		var kernels []struct {
			ID string `json:"id"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &kernels) != nil {
			s.fail(invLeak, fmt.Sprintf("listing the kernels of %s's server: %d %.300s %v", user, status, body, err))
			continue
		}
		if len(kernels) > 1 {
			s.fail(invLeak, fmt.Sprintf("%s's server runs %d kernels for one session: %.500s", user, len(kernels), body))
		}
	}
}
