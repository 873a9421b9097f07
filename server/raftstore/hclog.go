package raftstore

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// HCLogger adapts a *slog.Logger to hclog.Logger (what raft logs through).
type HCLogger struct {
	l    *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*HCLogger)(nil)

// NewHCLogger wraps l.
func NewHCLogger(l *slog.Logger) *HCLogger { return &HCLogger{l: l} }

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Log logs at level.
func (h *HCLogger) Log(level hclog.Level, msg string, args ...any) {
	lvl := slogLevel(level)
	if !h.l.Enabled(context.Background(), lvl) {
		return
	}
	if len(args)%2 == 1 { // hclog allows a trailing lone value
		args = append(args[:len(args)-1:len(args)-1], "extra", args[len(args)-1])
	}
	h.l.Log(context.Background(), lvl, strings.ToLower(msg), args...)
}

func (h *HCLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *HCLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *HCLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *HCLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *HCLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *HCLogger) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }

func (h *HCLogger) IsTrace() bool { return h.enabled(slog.LevelDebug) }
func (h *HCLogger) IsDebug() bool { return h.enabled(slog.LevelDebug) }
func (h *HCLogger) IsInfo() bool  { return h.enabled(slog.LevelInfo) }
func (h *HCLogger) IsWarn() bool  { return h.enabled(slog.LevelWarn) }
func (h *HCLogger) IsError() bool { return h.enabled(slog.LevelError) }

// ImpliedArgs returns the args added with With.
func (h *HCLogger) ImpliedArgs() []any { return h.args }

// With returns a logger with args added.
func (h *HCLogger) With(args ...any) hclog.Logger {
	if len(args)%2 == 1 {
		args = append(args[:len(args)-1:len(args)-1], "extra", args[len(args)-1])
	}
	return &HCLogger{l: h.l.With(args...), name: h.name, args: append(append([]any{}, h.args...), args...)}
}

// Name returns the logger's name.
func (h *HCLogger) Name() string { return h.name }

// Named returns a sub-logger.
func (h *HCLogger) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return &HCLogger{l: h.l.With("logger", n), name: n, args: h.args}
}

// ResetNamed returns a logger with the name replaced.
func (h *HCLogger) ResetNamed(name string) hclog.Logger {
	return &HCLogger{l: h.l.With("logger", name), name: name, args: h.args}
}

// SetLevel does nothing: the slog handler decides.
func (h *HCLogger) SetLevel(hclog.Level) {}

// GetLevel reports the most verbose enabled level.
func (h *HCLogger) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}

// StandardLogger returns a *log.Logger writing at info level.
func (h *HCLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer logging each write as one message.
func (h *HCLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return writer{h} }

type writer struct{ h *HCLogger }

func (w writer) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	lvl := hclog.Info
	switch {
	case strings.HasPrefix(msg, "[ERR"):
		lvl = hclog.Error
	case strings.HasPrefix(msg, "[WARN"):
		lvl = hclog.Warn
	case strings.HasPrefix(msg, "[DEBUG"), strings.HasPrefix(msg, "[TRACE"):
		lvl = hclog.Debug
	}
	w.h.Log(lvl, msg)
	return len(p), nil
}
