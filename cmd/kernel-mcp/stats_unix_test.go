//go:build unix

package main

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// With KERNEL_MCP_STATS_SIGNAL=1, SIGUSR1 logs the goroutine count.
func TestStatsSignal(t *testing.T) {
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getenv := func(k string) string {
		if k == "KERNEL_MCP_STATS_SIGNAL" {
			return "1"
		}
		return ""
	}
	watchStatsSignal(ctx, getenv, slog.New(slog.NewTextHandler(&log, nil)))
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`msg=stats goroutines=[1-9][0-9]* heap_inuse=[0-9]+`)
	deadline := time.Now().Add(10 * time.Second)
	for !re.MatchString(log.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no stats line 10 s after SIGUSR1; log: %q", log.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the log: the line is the event
	}
}
