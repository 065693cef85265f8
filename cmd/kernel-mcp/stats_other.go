//go:build !unix

package main

import (
	"context"
	"log/slog"
)

// watchStatsSignal does nothing where there is no SIGUSR1.
func watchStatsSignal(context.Context, func(string) string, *slog.Logger) {}
