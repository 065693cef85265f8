package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// docServer serves Client ID Metadata Documents over https on loopback,
// as anyone's server would: /client.json a good one (its client_id is the
// URL it was asked for), /moved a redirect to it, /big one over the size
// cap, /slow none before the client gives up. hits counts every request.
func docServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		self := "https://" + r.Host + r.URL.Path
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/client.json", http.StatusFound)
			return
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		doc := map[string]any{"client_id": self, "client_name": "doc client", "redirect_uris": []string{clientRedirect}}
		if r.URL.Path == "/big" {
			doc["padding"] = strings.Repeat("x", maxMetadataDocument)
		}
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// fakeDNS resolves the names of names, and no other.
func fakeDNS(names map[string]string) lookupFunc {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		v, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, s := range strings.Split(v, ",") {
			out = append(out, netip.MustParseAddr(s))
		}
		return out, nil
	}
}

// publicServer is an authorization server whose issuer is a public https
// name, as in production, served over plain HTTP on loopback for the test
// (nothing here needs its cookies).
func publicServer(t *testing.T, mod func(*Config)) *httptest.Server {
	cfg := Config{
		Issuer:   "https://kernels.example",
		Resource: "https://kernels.example/mcp",
		Login:    newTestIdP(t),
	}
	mod(&cfg)
	as, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(as.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// authorizeAt asks base's authorization endpoint to sign in for
// clientID, and returns the status and the body of the answer (redirects
// not followed).
func authorizeAt(t *testing.T, base, clientID string) (int, string) {
	t.Helper()
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {clientRedirect}, "scope": {Scope}, "state": {"s"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"},
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(base + PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetadataDocumentPrivateAddresses: a client id URL that leads to a
// private, loopback, link-local, multicast or unspecified address, by
// name or literally, is refused with invalid_client and a message naming
// why, and nothing is fetched; a name that resolves to a public and a
// private address is refused too.
func TestMetadataDocumentPrivateAddresses(t *testing.T) {
	docs, hits := docServer(t)
	port := docs.Listener.Addr().(*net.TCPAddr).Port
	docsClient := docs.Client()
	t.Cleanup(docsClient.CloseIdleConnections)
	names := map[string]string{
		"metadata.test": "169.254.169.254",
		"intranet.test": "10.1.2.3",
		"home.test":     "192.168.1.20",
		"cgnat.test":    "100.64.0.7",
		"loopback.test": "127.0.0.1",
		"v6loop.test":   "::1",
		"ula.test":      "fd12:3456::1",
		"mapped.test":   "::ffff:10.1.2.3",
		"nat64.test":    "64:ff9b::a9fe:a9fe",
		"mixed.test":    "93.184.216.34,10.9.9.9",
		"zero.test":     "0.0.0.0",
		"mcast.test":    "239.1.2.3",
	}
	srv := publicServer(t, func(c *Config) {
		c.lookupHost = fakeDNS(names)
		c.HTTPClient = docsClient
	})
	at := func(host string) string {
		return "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/client.json"
	}
	for id, want := range map[string]string{
		at("metadata.test"):   "metadata.test resolves to 169.254.169.254, a link-local address",
		at("intranet.test"):   "intranet.test resolves to 10.1.2.3, a private address",
		at("home.test"):       "a private address",
		at("cgnat.test"):      "a private (carrier-grade NAT) address",
		at("loopback.test"):   "loopback.test resolves to 127.0.0.1, a loopback address",
		at("v6loop.test"):     "v6loop.test resolves to ::1, a loopback address",
		at("ula.test"):        "a private address",
		at("mapped.test"):     "a private address",
		at("nat64.test"):      "a link-local address (where a cloud's instance metadata service answers) behind NAT64",
		at("mixed.test"):      "mixed.test resolves to 10.9.9.9, a private address",
		at("zero.test"):       "an unspecified address",
		at("mcast.test"):      "a multicast address",
		at("127.0.0.1"):       "127.0.0.1 is a loopback address",
		at("::1"):             "::1 is a loopback address",
		at("169.254.169.254"): "169.254.169.254 is a link-local address",
		at("10.0.0.1"):        "10.0.0.1 is a private address",
		"http://127.0.0.1:" + strconv.Itoa(port) + "/client.json": "must be served over https",
	} {
		status, body := authorizeAt(t, srv.URL, id)
		if status != http.StatusBadRequest || !strings.HasPrefix(body, "invalid_client: ") || !strings.Contains(body, want) {
			t.Errorf("client id %s: %d %q, want 400 invalid_client naming %q", id, status, body, want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the document server was asked %d times; nothing should have reached it", n)
	}

	// The same document, from the same loopback server, is fetched for a
	// server that is itself on loopback: a client on the same machine.
	e := newEnv(t, func(c *Config) {
		c.lookupHost = fakeDNS(map[string]string{"example.com": "127.0.0.1"}) // a name the test certificate holds
		c.HTTPClient = docsClient
	})
	if status, body := authorizeAt(t, e.srv.URL, "https://example.com:"+strconv.Itoa(port)+"/client.json"); status != http.StatusFound || hits.Load() != 1 {
		t.Errorf("a loopback document for a server on loopback: %d %q, %d fetches", status, body, hits.Load())
	}
	// Private addresses stay refused there.
	if status, body := authorizeAt(t, e.srv.URL, at("10.0.0.1")); status != http.StatusBadRequest || !strings.Contains(body, "a private address") {
		t.Errorf("a private document for a server on loopback: %d %q", status, body)
	}
}

// TestMetadataDocumentFetchLimits: no redirect is followed, a document
// over the size cap is refused, and a server that does not answer is
// given up on after the fetch timeout.
func TestMetadataDocumentFetchLimits(t *testing.T) {
	docs, hits := docServer(t)
	docsClient := docs.Client()
	t.Cleanup(docsClient.CloseIdleConnections)
	e := newEnv(t, func(c *Config) {
		c.HTTPClient = docsClient
		c.fetchTimeout = 300 * time.Millisecond
	})
	for path, want := range map[string]string{
		"/moved": "answered 302 Found, a redirect: redirects are not followed",
		"/big":   "is over 65536 bytes",
		"/slow":  "no answer within 300ms",
	} {
		start := time.Now()
		status, body := authorizeAt(t, e.srv.URL, docs.URL+path)
		if status != http.StatusBadRequest || !strings.HasPrefix(body, "invalid_client: ") || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 invalid_client naming %q", path, status, body, want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: answered after %v", path, d)
		}
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("%d requests to the document server, want 3 (the redirect not followed)", n)
	}
}

// TestAddressGuard: the categories, one address each.
func TestAddressGuard(t *testing.T) {
	g := &addressGuard{}
	for addr, ok := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1::1": true, "8.8.8.8": true, "2002:5db8:d822::1": true, "64:ff9b::5db8:d822": true,
		"127.0.0.1": false, "127.1.2.3": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "172.31.255.255": false,
		"192.168.0.1": false, "100.64.0.1": false, "169.254.169.254": false, "fe80::1": false, "fd00:ec2::254": false,
		"0.0.0.0": false, "::": false, "0.1.2.3": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false, "2002:a00:1::1": false, "fec0::1": false, "::10.0.0.1": false,
	} {
		if why := g.refuse(netip.MustParseAddr(addr)); (why == "") != ok {
			t.Errorf("%s: refused %q, want allowed %v", addr, why, ok)
		}
	}
	if why := (&addressGuard{allowLoopback: true}).refuse(netip.MustParseAddr("::1")); why != "" {
		t.Errorf("::1 for a server on loopback: %q", why)
	}
}
