package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// logWriter turns memberlist's "[LEVEL] memberlist: msg" lines into slog
// records at the matching level.
type logWriter struct{ log *slog.Logger }

func newStdLogger(l *slog.Logger) *log.Logger {
	return log.New(&logWriter{log: l}, "", 0)
}

func (w *logWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, x := range []struct {
		tag   string
		level slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[TRACE]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}, {"[ERROR]", slog.LevelError}} {
		if bytes.HasPrefix(line, []byte(x.tag)) {
			level = x.level
			line = bytes.TrimSpace(line[len(x.tag):])
			break
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	w.log.Log(context.Background(), level, string(line))
	return len(p), nil
}
