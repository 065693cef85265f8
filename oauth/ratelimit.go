package oauth

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Dynamic Client Registration is open to anyone, and each registration is
// written to the state file: it is limited per remote address and overall.
// Behind a proxy every client has the proxy's address, and the limit per
// address is then a second overall one.
const (
	registrationsPerAddressBurst = 20
	registrationsPerAddressEvery = 10 * time.Second // one more token each
	registrationsBurst           = 60
	registrationsEvery           = 2 * time.Second
	// maxTrackedAddresses bounds the buckets kept per address; past it,
	// only the overall limit applies to a new address.
	maxTrackedAddresses = 10000
)

// bucket is a token bucket: burst tokens at most, one more every every.
type bucket struct {
	tokens float64
	last   time.Time
}

// level is b's tokens at now.
func (b *bucket) level(now time.Time, burst int, every time.Duration) float64 {
	if b.last.IsZero() {
		return float64(burst)
	}
	return math.Min(float64(burst), b.tokens+float64(now.Sub(b.last))/float64(every))
}

// wait is how long until b has one token, at level.
func wait(level float64, every time.Duration) time.Duration {
	if level >= 1 {
		return 0
	}
	return time.Duration((1 - level) * float64(every))
}

// rateLimiter is the registration limit: a bucket per remote address (an
// IPv6 address by its /64, what one host usually has) and one overall.
type rateLimiter struct {
	mu      sync.Mutex
	overall bucket
	byAddr  map[netip.Prefix]*bucket
}

func newRateLimiter() *rateLimiter { return &rateLimiter{byAddr: map[netip.Prefix]*bucket{}} }

// addressKey is the bucket's key for a request's RemoteAddr.
func addressKey(remote string) (netip.Prefix, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p, true
}

// allow takes a token from remote's bucket and the overall one when both
// have one, and otherwise takes none and says how long to wait.
func (l *rateLimiter) allow(remote string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	overall := l.overall.level(now, registrationsBurst, registrationsEvery)
	var b *bucket
	own := float64(registrationsPerAddressBurst)
	if key, ok := addressKey(remote); ok {
		if b = l.byAddr[key]; b == nil {
			if len(l.byAddr) >= maxTrackedAddresses {
				l.pruneLocked(now)
			}
			if len(l.byAddr) < maxTrackedAddresses {
				b = &bucket{}
				l.byAddr[key] = b
			}
		}
		if b != nil {
			own = b.level(now, registrationsPerAddressBurst, registrationsPerAddressEvery)
		}
	}
	if overall < 1 || own < 1 {
		return false, max(wait(overall, registrationsEvery), wait(own, registrationsPerAddressEvery))
	}
	l.overall = bucket{tokens: overall - 1, last: now}
	if b != nil {
		*b = bucket{tokens: own - 1, last: now}
	}
	return true, 0
}

// pruneLocked forgets the buckets that are full again: a new one is the
// same.
func (l *rateLimiter) pruneLocked(now time.Time) {
	for k, b := range l.byAddr {
		if b.level(now, registrationsPerAddressBurst, registrationsPerAddressEvery) >= registrationsPerAddressBurst {
			delete(l.byAddr, k)
		}
	}
}
