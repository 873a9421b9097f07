package logmon

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestMonitorLevelsFormatsAndAttrs(t *testing.T) {
	var base bytes.Buffer
	hub := NewHub()
	log := slog.New(hub.Handler(slog.NewTextHandler(&base, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log = log.With("component", "server").WithGroup("g")

	log.Debug("before any monitor")
	dbg := hub.Subscribe(slog.LevelDebug, false, 8)
	js := hub.Subscribe(slog.LevelInfo, true, 8)
	log.Debug("debug line", "k", 1)
	log.Info("info line", "k", 2)
	log.Warn("warn line", "k", 3)
	dbg.Close()
	js.Close()
	dbg.Close() // twice is fine
	log.Error("after close")

	got := drain(dbg)
	if len(got) != 3 || !strings.Contains(got[0], "debug line") || !strings.Contains(got[0], "component=server") ||
		!strings.Contains(got[0], "g.k=1") || !strings.Contains(got[2], "warn line") {
		t.Fatalf("debug monitor got %q", got)
	}
	lines := drain(js)
	if len(lines) != 2 {
		t.Fatalf("json monitor got %d lines, want 2 (info, warn): %q", len(lines), lines)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("json line %q: %v", lines[0], err)
	}
	if rec["msg"] != "info line" || rec["component"] != "server" || rec["g"].(map[string]any)["k"] != 2.0 {
		t.Fatalf("json record %v", rec)
	}
	// The agent's own output keeps its level.
	out := base.String()
	if strings.Contains(out, "info line") || !strings.Contains(out, "warn line") || !strings.Contains(out, "after close") {
		t.Fatalf("base output %q", out)
	}
	if strings.Contains(strings.Join(got, ""), "before any monitor") {
		t.Fatal("a monitor saw a record from before it subscribed")
	}
}

func TestFullQueueDropsInsteadOfBlocking(t *testing.T) {
	hub := NewHub()
	log := slog.New(hub.Handler(slog.DiscardHandler))
	s := hub.Subscribe(slog.LevelInfo, false, 2)
	defer s.Close()
	for range 5 {
		log.Info("x")
	}
	if n := len(drain(s)); n != 2 {
		t.Fatalf("queued %d lines, want 2", n)
	}
	if d := s.Dropped(); d != 3 {
		t.Fatalf("dropped %d, want 3", d)
	}
	if !log.Handler().Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("handler disabled info while a monitor wants it")
	}
	s.Close()
	if log.Handler().Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("handler still enabled for info with no monitor and a discarding base")
	}
}

func drain(s *Subscription) []string {
	var out []string
	for {
		select {
		case b := <-s.C():
			out = append(out, string(b))
		default:
			return out
		}
	}
}
