package kernel

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// A gateway client's errors and its String hide the URL's password,
// whatever quotes it, and still match the error they rewrite.
func TestGatewayClientRedacts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	g := Gateway{URL: "http://user:s3cr%2Fet@" + addr}
	c, err := g.client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.release()
	if s := c.String(); strings.Contains(s, "s3cr") || !strings.Contains(s, "user:xxxxx@"+addr) {
		t.Errorf("String: %s", s)
	}
	err = c.do(context.Background(), "GET", "/api/kernelspecs", nil, nil, 200)
	if err == nil || strings.Contains(err.Error(), "s3cr") || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("do: %v", err)
	}
	base := errors.New(`Get "http://user:s3cr%2Fet@` + addr + `/x": s3cr/et`)
	red := c.redact(base)
	if strings.Contains(red.Error(), "s3cr") || !errors.Is(red, base) {
		t.Errorf("redact: %v", red)
	}
	if _, err := (&Gateway{URL: "http://user:s3cret@[::1"}).client(); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a URL that does not parse: %v", err)
	}
}
