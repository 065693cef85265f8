package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// KernelLimit bounds the running kernels of several servers together: the
// servers of the users of one process. Its lock is every member's limit
// lock, so a start in one server and a start in another cannot both take
// the last place.
type KernelLimit struct {
	max     int
	mu      sync.Mutex
	servers []*Engine
}

// NewKernelLimit returns a limit of max running kernels (starting or
// running) across the servers whose Config.SharedLimit it is; 0 means none.
func NewKernelLimit(max int) *KernelLimit { return &KernelLimit{max: max} }

// join adds a server and returns the lock it must take to check the limit.
func (l *KernelLimit) join(s *Engine) *sync.Mutex {
	l.mu.Lock()
	l.servers = append(l.servers, s)
	l.mu.Unlock()
	return &l.mu
}

// check fails when one more kernel, for self in s, would exceed the shared
// limit. It names only s's own sessions: other users' session names are
// theirs. Call with l.mu held (it is s.limitMu).
func (l *KernelLimit) check(s *Engine, self *Session) error {
	if l == nil || l.max <= 0 {
		return nil
	}
	total := 0
	var mine []string
	for _, srv := range l.servers {
		srv.mu.Lock()
		all := make([]*Session, 0, len(srv.sessions))
		for _, ss := range srv.sessions {
			all = append(all, ss)
		}
		srv.mu.Unlock()
		for _, ss := range all {
			if ss != self && ss.holdsKernel() {
				total++
				if srv == s {
					mine = append(mine, ss.id)
				}
			}
		}
	}
	if total < l.max {
		return nil
	}
	slices.Sort(mine)
	yours := "none of them are yours"
	if len(mine) > 0 {
		yours = fmt.Sprintf("%d of them are yours: %s; delete_session on one of those frees its kernel", len(mine), strings.Join(mine, ", "))
	}
	return fmt.Errorf("the server's limit of %d running kernels across all users (max sessions) is reached; %s. Retry later", l.max, yours)
}
