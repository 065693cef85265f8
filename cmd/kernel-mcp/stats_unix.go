//go:build unix

package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// watchStatsSignal logs the server's goroutine count and Go heap on each
// SIGUSR1 until ctx ends, when KERNEL_MCP_STATS_SIGNAL is 1: a soak test
// (or an operator chasing a leak) reads them from the log. Off by default,
// since SIGUSR1 otherwise keeps its default action.
func watchStatsSignal(ctx context.Context, getenv func(string) string, logger *slog.Logger) {
	if getenv("KERNEL_MCP_STATS_SIGNAL") != "1" {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				logger.Info("stats", "goroutines", runtime.NumGoroutine(), "heap_inuse", m.HeapInuse)
			}
		}
	}()
}
