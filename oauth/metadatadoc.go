package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Client ID Metadata Documents: a client id that is an https URL names the
// client's metadata, which the server fetches. Anyone can name any URL, so
// the fetch is an HTTP request made from inside the server's network on a
// stranger's behalf: it must not reach what only the server can reach. The
// fetcher therefore dials public addresses only (loopback too when the
// server itself is on loopback, for a client on the same machine), checks
// the address it actually connects to (a name is resolved once, each
// address checked, and the checked address is the one dialled, so DNS
// rebinding cannot lead elsewhere), follows no redirect, goes through no
// proxy (a proxy would dial the target unchecked), and gives up after
// metadataFetchTimeout and past maxMetadataDocument bytes.

// Limits of a metadata document fetch.
const (
	metadataFetchTimeout = 5 * time.Second
	// maxMetadataFetches is how many fetches may be under way at once: a
	// stranger's authorization requests cannot make the server open more
	// connections than this.
	maxMetadataFetches = 16
)

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// metadataFetcher fetches Client ID Metadata Documents.
type metadataFetcher struct {
	hc      *http.Client
	guard   *addressGuard
	timeout time.Duration
	slots   chan struct{}
}

// newMetadataFetcher makes the fetcher. base, when set, lends its TLS
// settings (the certificates trusted), nothing else: the connection is
// always made by the address-checking dialer. allowLoopback admits this
// machine's loopback addresses; lookup (nil: the system's resolver) and
// timeout (0: metadataFetchTimeout) are for tests.
func newMetadataFetcher(base *http.Client, allowLoopback bool, lookup lookupFunc, timeout time.Duration) *metadataFetcher {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if timeout <= 0 {
		timeout = metadataFetchTimeout
	}
	g := &addressGuard{allowLoopback: allowLoopback, lookup: lookup, timeout: timeout}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: maxMetadataDocument,
		// One fetch per client every few minutes: no connection is worth
		// keeping, and none outlives its fetch.
		DisableKeepAlives: true,
	}
	if base != nil {
		if bt, ok := base.Transport.(*http.Transport); ok && bt.TLSClientConfig != nil {
			tr.TLSClientConfig = bt.TLSClientConfig.Clone()
		}
	}
	return &metadataFetcher{
		hc: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			// The document is at the client id, not elsewhere: a redirect
			// is answered as what it is, and refused.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		guard:   g,
		timeout: timeout,
		slots:   make(chan struct{}, maxMetadataFetches),
	}
}

// isMetadataDocumentID reports whether a client id is a Client ID Metadata
// Document's URL rather than an id this server gave out.
func isMetadataDocumentID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// checkURL accepts a client id URL: https with a path, or plain http to a
// loopback address (a client on this machine) when the server itself is
// on loopback, never with credentials, a fragment, or dot segments.
func (f *metadataFetcher) checkURL(id string) (*url.URL, error) {
	u, err := url.Parse(id)
	if err != nil {
		return nil, fmt.Errorf("client id %q is not a URL", id)
	}
	switch {
	case u.Scheme == "http" && !(f.guard.allowLoopback && loopbackHost(u.Hostname())):
		return nil, fmt.Errorf("client id %q: a client metadata document must be served over https (plain http only from a loopback address, to a server itself on loopback)", id)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("client id %q: a client metadata document must be served over https", id)
	case u.User != nil, u.Fragment != "", u.Host == "":
		return nil, fmt.Errorf("client id %q: a client metadata document URL may hold no credentials or fragment and must name a host", id)
	case u.Path == "" || u.Path == "/":
		return nil, fmt.Errorf("client id %q: a client metadata document URL must have a path", id)
	case slices.Contains(strings.Split(u.Path, "/"), ".."), slices.Contains(strings.Split(u.Path, "/"), "."):
		return nil, fmt.Errorf("client id %q: a client metadata document URL may not hold . or .. segments", id)
	}
	return u, nil
}

// fetch fetches and checks the Client ID Metadata Document named by id:
// its client_id must be id itself.
func (f *metadataFetcher) fetch(ctx context.Context, id string) (*client, error) {
	if _, err := f.checkURL(id); err != nil {
		return nil, err
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		return nil, fmt.Errorf("client id %q: too many client metadata documents are being fetched; try again in a few seconds", id)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, fmt.Errorf("client id %q: %v", id, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.hc.Do(req)
	if err != nil {
		if re := (*refusedAddress)(nil); errors.As(err, &re) {
			return nil, fmt.Errorf("client metadata document %s not fetched: %v", id, re)
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("client metadata document %s not fetched: no answer within %v", id, f.timeout)
		}
		return nil, fmt.Errorf("fetching the client metadata document %s: %v", id, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("client metadata document %s answered %s, a redirect: redirects are not followed; the document must be at its client id URL itself", id, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("fetching the client metadata document %s: %s", id, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return nil, fmt.Errorf("client metadata document %s is %q, not JSON", id, mt)
	}
	if resp.ContentLength > maxMetadataDocument {
		return nil, fmt.Errorf("client metadata document %s is over %d bytes", id, maxMetadataDocument)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataDocument+1))
	if err != nil {
		return nil, fmt.Errorf("fetching the client metadata document %s: %v", id, err)
	}
	if len(b) > maxMetadataDocument {
		return nil, fmt.Errorf("client metadata document %s is over %d bytes", id, maxMetadataDocument)
	}
	var m clientMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("client metadata document %s: %v", id, err)
	}
	if m.ClientID != id {
		return nil, fmt.Errorf("client metadata document %s names client_id %q, not its own URL", id, m.ClientID)
	}
	c, err := m.validate()
	if err != nil {
		return nil, fmt.Errorf("client metadata document %s: %v", id, err)
	}
	c.ID = id
	c.Registered = registeredCIMD
	return c, nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// addressGuard is the fetcher's dialer: it resolves, checks every address,
// and dials only the checked ones.
type addressGuard struct {
	allowLoopback bool
	lookup        lookupFunc
	timeout       time.Duration
}

// refusedAddress is a dial refused for where it leads.
type refusedAddress struct {
	host string // as named in the URL
	addr netip.Addr
	why  string
}

func (e *refusedAddress) Error() string {
	if e.host == e.addr.String() {
		return fmt.Sprintf("%s is %s; this server fetches client metadata documents from public addresses only", e.host, e.why)
	}
	return fmt.Sprintf("%s resolves to %s, %s; this server fetches client metadata documents from public addresses only", e.host, e.addr, e.why)
}

func (g *addressGuard) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = g.lookup(ctx, host); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	// Every address must pass, not only the first: a name that also
	// leads inside is refused as a whole.
	for _, a := range addrs {
		if why := g.refuse(a); why != "" {
			return nil, &refusedAddress{host: host, addr: a, why: why}
		}
	}
	d := &net.Dialer{Timeout: g.timeout, Control: func(_, address string, _ syscall.RawConn) error {
		// The socket's own address, last: what is connected to is what
		// was checked.
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if why := g.refuse(ap.Addr()); why != "" {
			return &refusedAddress{host: host, addr: ap.Addr(), why: why}
		}
		return nil
	}}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// reservedPrefixes are the special-purpose blocks (RFC 6890 and its
// updates) that IsPrivate and the other netip tests leave out, none of
// which holds a public web server.
var reservedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address`},
	{netip.MustParsePrefix("100.64.0.0/10"), "a private (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a reserved (benchmarking) address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("::/96"), "a reserved (IPv4-compatible) address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a private (local NAT64) address"},
	{netip.MustParsePrefix("100::/64"), "a reserved (discard) address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "a private (site-local) address"},
}

// IPv6 prefixes that carry an IPv4 address, checked as that address.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the last 4 bytes
	sixToFour   = netip.MustParsePrefix("2002::/16")    // RFC 3056: bytes 2 to 5
)

// refuse says why a is not to be dialled, or "" when it may be.
func (g *addressGuard) refuse(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsLoopback():
		if g.allowLoopback {
			return ""
		}
		return "a loopback address (allowed only when this server itself is on loopback)"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (where a cloud's instance metadata service answers)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	}
	for _, r := range reservedPrefixes {
		if r.p.Contains(a) {
			return r.why
		}
	}
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		if why := g.refuse(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
			return why + " behind NAT64"
		}
	case sixToFour.Contains(a):
		if why := g.refuse(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
			return why + " behind 6to4"
		}
	}
	return ""
}
