package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Tasks is a driver's table of the tasks it runs, by task ID, with what
// every driver does with it: find a task (ErrTaskNotFound when it is not
// there), refuse to start one twice, and write and read back the handle
// that carries its state across an agent restart. T is the driver's own
// task type (a pointer). The zero value is an empty table; it is safe for
// concurrent use.
type Tasks[T comparable] struct {
	mu sync.Mutex
	m  map[string]T
}

// Get returns task id, or an error wrapping ErrTaskNotFound.
func (ts *Tasks[T]) Get(id string) (T, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.m[id]
	if !ok {
		var zero T
		return zero, fmt.Errorf("task %q: %w", id, ErrTaskNotFound)
	}
	return t, nil
}

// CheckNew is StartTask's first check: an error when task id is in the
// table already.
func (ts *Tasks[T]) CheckNew(id string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.m[id]; ok {
		return fmt.Errorf("start task %q: already running", id)
	}
	return nil
}

// Add puts t in the table as task id unless the ID is taken (by a
// concurrent start or recovery); it reports whether t went in.
func (ts *Tasks[T]) Add(id string, t T) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.m[id]; ok {
		return false
	}
	if ts.m == nil {
		ts.m = map[string]T{}
	}
	ts.m[id] = t
	return true
}

// Set puts t in the table as task id, replacing what was there.
func (ts *Tasks[T]) Set(id string, t T) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]T{}
	}
	ts.m[id] = t
}

// Remove takes task id out of the table if it is t: a task that took the
// ID over since stays.
func (ts *Tasks[T]) Remove(id string, t T) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m[id] == t {
		delete(ts.m, id)
	}
}

// Delete takes task id out of the table.
func (ts *Tasks[T]) Delete(id string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.m, id)
}

// All returns the tasks in the table, in no order.
func (ts *Tasks[T]) All() []T {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Collect(maps.Values(ts.m))
}

// Clear empties the table and returns what it held, in no order.
func (ts *Tasks[T]) Clear() []T {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := slices.Collect(maps.Values(ts.m))
	ts.m = nil
	return out
}

// Recover is RecoverTask's first step: known when h's task is in the
// table already (there is nothing to do), else h's DriverState decoded
// into state. Errors wrap ErrRecoverFailed.
func (ts *Tasks[T]) Recover(h *TaskHandle, state any) (known bool, err error) {
	if h == nil || h.Config == nil {
		return false, fmt.Errorf("recover: %w: empty handle", ErrRecoverFailed)
	}
	if _, err := ts.Get(h.Config.ID); err == nil {
		return true, nil
	}
	if err := json.Unmarshal(h.DriverState, state); err != nil {
		return false, fmt.Errorf("recover task %q: %w: decode state: %v", h.Config.ID, ErrRecoverFailed, err)
	}
	return false, nil
}

// StopSignal is the signal StopTask sends: signal when given, else the
// task's kill_signal ("" when neither is set: the driver's default).
func (c *TaskConfig) StopSignal(signal string) string {
	if signal == "" {
		return c.KillSignal
	}
	return signal
}

// NewHandle is the handle StartTask returns for task cfg, started at
// startedAt, with state (JSON-encoded) as its DriverState.
func NewHandle(version int, cfg *TaskConfig, state any, startedAt time.Time) (*TaskHandle, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("start task %q: encode driver state: %w", cfg.ID, err)
	}
	return &TaskHandle{Version: version, Config: cfg, DriverState: b, StartedAt: startedAt}, nil
}

// WaitExit is WaitTask's channel: once done is closed it yields result()
// (unless that is nil: the task ended without one) and closes; when ctx
// ends first it closes unsent.
func WaitExit(ctx context.Context, done <-chan struct{}, result func() *ExitResult) <-chan *ExitResult {
	ch := make(chan *ExitResult, 1)
	go func() { // ends with done or ctx
		defer close(ch)
		select {
		case <-done:
			if r := result(); r != nil {
				ch <- r
			}
		case <-ctx.Done():
		}
	}()
	return ch
}
