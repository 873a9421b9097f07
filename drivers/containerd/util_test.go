package containerd

import (
	"log/slog"
	"os"
	"testing"
)

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// filepathShortTemp is a temp dir with a short path (unix socket paths
// are limited to 108 bytes; t.TempDir embeds the test name).
func filepathShortTemp(t *testing.T) (string, error) {
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
