package localcluster

import (
	"io"
	"log/slog"
)

// logger is a structured logger for a component of the cluster that writes to the log.
func logger(w io.Writer, component string) *slog.Logger {
	return slog.New(slog.NewTextHandler(prefixed(w, component), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
