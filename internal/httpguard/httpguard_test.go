package httpguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true},
		{"localhost", true},
		{"LocalHost", true},
		{"localhost.", true},
		{"0.0.0.0", false},
		{"::", false},
		{"", false},
		{"128.0.0.1", false},
		{"10.0.0.5", false},
		{"192.168.1.10", false},
		{"::2", false},
		{"fe80::1%eth0", false},
		{"example.com", false},
		{"localhost.example.com", false},
		{"127.0.0.1.nip.io", false},
	}
	for _, tt := range tests {
		if got := LoopbackHost(tt.host); got != tt.want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestRebinding(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765}
	loop6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8765}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 10), Port: 8765}
	tests := []struct {
		local net.Addr
		host  string
		want  bool
	}{
		{loop, "127.0.0.1:8765", false},
		{loop, "localhost:8765", false},
		{loop, "localhost", false},
		{loop, "[::1]:8765", false},
		{loop6, "[::1]:8765", false},
		{loop, "evil.example:8765", true},
		{loop, "evil.example", true},
		{loop6, "attacker.test", true},
		{loop, "192.168.1.10:8765", true},
		{loop, "", true},
		{lan, "evil.example:8765", false}, // bound beyond loopback: the token decides
		{nil, "evil.example", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		r.Host = tt.host
		if tt.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
		}
		if got := Rebinding(r); got != tt.want {
			t.Errorf("local %v, Host %q: Rebinding = %v, want %v", tt.local, tt.host, got, tt.want)
		}
	}
}
