package logmon

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// DefaultQueue is a subscription's queue length when none is given.
const DefaultQueue = 512

// Hub holds the live monitors of one agent.
type Hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
	// lowest is the lowest level any subscriber wants (math.MaxInt when
	// none), read without the lock on every log call.
	lowest atomic.Int64
}

// NewHub returns a hub without subscribers.
func NewHub() *Hub {
	h := &Hub{subs: map[*Subscription]struct{}{}}
	h.lowest.Store(int64(noSubscribers))
	return h
}

const noSubscribers = slog.Level(1 << 30)

// Subscription is one monitor: formatted log lines at or above Level.
type Subscription struct {
	hub     *Hub
	level   slog.Level
	json    bool
	ch      chan []byte
	dropped atomic.Uint64
	once    sync.Once
}

// Subscribe starts a monitor of records at level and above, formatted as
// JSON lines when json is set (else slog's text format). queue <= 0 means
// DefaultQueue. Close it when done.
func (h *Hub) Subscribe(level slog.Level, json bool, queue int) *Subscription {
	if queue <= 0 {
		queue = DefaultQueue
	}
	s := &Subscription{hub: h, level: level, json: json, ch: make(chan []byte, queue)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.recompute()
	h.mu.Unlock()
	return s
}

// C delivers the formatted lines (each ends in a newline); it is never
// closed, so select on it with the reader's context.
func (s *Subscription) C() <-chan []byte { return s.ch }

// Dropped is how many records this monitor lost to a full queue.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the monitor; it is safe to call more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.hub.mu.Lock()
		delete(s.hub.subs, s)
		s.hub.recompute()
		s.hub.mu.Unlock()
	})
}

// recompute sets lowest; h.mu is held.
func (h *Hub) recompute() {
	low := noSubscribers
	for s := range h.subs {
		low = min(low, s.level)
	}
	h.lowest.Store(int64(low))
}

// Handler returns a handler that logs to next and to the hub's monitors.
func (h *Hub) Handler(next slog.Handler) slog.Handler {
	return &tee{hub: h, next: next}
}

// tee passes records to next and formats them for each monitor that
// wants them. ops replays WithAttrs/WithGroup on each monitor's handler.
type tee struct {
	hub  *Hub
	next slog.Handler
	ops  []op
}

type op struct {
	group string
	attrs []slog.Attr
}

func (t *tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t.next.Enabled(ctx, l) || l >= slog.Level(t.hub.lowest.Load())
}

func (t *tee) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if t.next.Enabled(ctx, r.Level) {
		err = t.next.Handle(ctx, r)
	}
	if r.Level < slog.Level(t.hub.lowest.Load()) {
		return err
	}
	t.hub.mu.Lock()
	subs := make([]*Subscription, 0, len(t.hub.subs))
	for s := range t.hub.subs {
		if r.Level >= s.level {
			subs = append(subs, s)
		}
	}
	t.hub.mu.Unlock()
	var text, js []byte
	for _, s := range subs {
		line := &text
		if s.json {
			line = &js
		}
		if *line == nil {
			*line = t.format(ctx, r, s.json)
		}
		select {
		case s.ch <- *line:
		default:
			s.dropped.Add(1)
		}
	}
	return err
}

// format renders r as one line, with the handler chain's attrs and groups.
func (t *tee) format(ctx context.Context, r slog.Record, json bool) []byte {
	var buf bytes.Buffer
	var h slog.Handler
	opts := &slog.HandlerOptions{Level: slog.LevelDebug - 8}
	if json {
		h = slog.NewJSONHandler(&buf, opts)
	} else {
		h = slog.NewTextHandler(&buf, opts)
	}
	for _, o := range t.ops {
		if o.group != "" {
			h = h.WithGroup(o.group)
		} else {
			h = h.WithAttrs(o.attrs)
		}
	}
	_ = h.Handle(ctx, r) // writes to a buffer: cannot fail
	return buf.Bytes()
}

func (t *tee) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return t
	}
	return &tee{hub: t.hub, next: t.next.WithAttrs(as), ops: append(t.ops[:len(t.ops):len(t.ops)], op{attrs: as})}
}

func (t *tee) WithGroup(name string) slog.Handler {
	if name == "" {
		return t
	}
	return &tee{hub: t.hub, next: t.next.WithGroup(name), ops: append(t.ops[:len(t.ops):len(t.ops)], op{group: name})}
}
