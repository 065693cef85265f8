// Package httpguard holds the checks that every HTTP port of kernel-mcp
// makes before a request reaches what it asks for: the MCP endpoint and the
// web view refuse in the same way, from one place.
//
//	if httpguard.Rebinding(r) {
//		httpguard.RefuseUnread(w)
//		http.Error(w, "forbidden Host", http.StatusForbidden)
//		return
//	}
package httpguard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// LoopbackHost reports whether host (a bind address or a Host header's
// name, with or without brackets or a zone, without a port) names only this
// machine: 127.0.0.0/8, ::1 (also IPv4-mapped) or "localhost".
func LoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, "localhost.") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// Rebinding reports whether r came in on a loopback address but names
// another host in its Host header: a page from some site whose name was
// made to resolve to 127.0.0.1 (DNS rebinding), which the browser takes
// for one origin with this port, so that its requests pass as
// same-origin. It is the rule
// of the MCP SDK's own protection of the streamable HTTP and SSE
// endpoints, for the ports that do not go through them. A request that
// came in on another address (a server bound to a LAN address on purpose)
// is left to the token.
func Rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	addr, err := netip.ParseAddrPort(local.String())
	if err != nil || !addr.Addr().Unmap().IsLoopback() {
		return false
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host // no port
	}
	return !LoopbackHost(host)
}

// RefuseUnread readies w for an answer that refuses r without reading its
// body, to be written next: the connection is closed after it, and the
// body is given up at once. A client refused must not hold a connection by
// sending the body it declared slowly: Go's server would otherwise read up
// to 256 KiB of it, unbounded in time, before writing the answer.
func RefuseUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	// A read deadline in the past makes the server give up on the body
	// rather than drain it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
