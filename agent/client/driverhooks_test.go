package client

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/testproc"
)

// eventDriver is the fake driver with the two optional hooks: it reports
// a progress message while it starts a task, and lists one leftover.
type eventDriver struct {
	*fakeDriver
	mu      sync.Mutex
	onEvent func(taskID, message string, at time.Time)
	known   [][]string // the known IDs of each Leftovers call
}

func (d *eventDriver) OnTaskEvent(fn func(taskID, message string, at time.Time)) {
	d.mu.Lock()
	d.onEvent = fn
	d.mu.Unlock()
}

func (d *eventDriver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	fn := d.onEvent
	d.mu.Unlock()
	if fn != nil {
		fn(cfg.ID, "pulling image busybox", time.Unix(1700000000, 0))
		fn("not-a-task-id", "dropped", time.Now())
	}
	return d.fakeDriver.StartTask(ctx, cfg)
}

func (d *eventDriver) Leftovers(_ context.Context, known []string) ([]string, error) {
	d.mu.Lock()
	d.known = append(d.known, slices.Clone(known))
	d.mu.Unlock()
	return []string{"stray-container"}, nil
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDriverEventsAndLeftovers: a driver's progress message becomes a
// "Driver" task event of the task it names; at start, after restoring
// allocs, the client lists leftovers with the restored tasks' IDs as
// known and logs each at WARN without stopping anything.
func TestDriverEventsAndLeftovers(t *testing.T) {
	var (
		mu        sync.Mutex
		instances []*eventDriver
	)
	factory := func(o drivers.Options) (drivers.Driver, error) {
		f, _ := fakeFactory(o)
		d := &eventDriver{fakeDriver: f.(*fakeDriver)}
		mu.Lock()
		instances = append(instances, d)
		mu.Unlock()
		return d, nil
	}
	srv := newFakeServer(t)
	dir := t.TempDir()
	cfg := func(log *lockedBuf) *Config {
		c := testConfig(dir, srv.addr())
		c.Drivers = map[string]drivers.Factory{"fake": factory}
		c.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		return c
	}
	log1 := &lockedBuf{}
	c1, err := New(cfg(log1))
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c1.NodeID(), "dddddddd-0000-4000-8000-000000000001", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })

	ar, err := c1.runner(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got *api.TaskEvent
	for _, e := range ar.Alloc().TaskStates["web"].Events {
		if e.Type == api.TaskDriverMessage {
			got = e
		}
	}
	if got == nil || got.DisplayMessage != "pulling image busybox" || got.Time != time.Unix(1700000000, 0).UnixNano() {
		t.Errorf("Driver event = %+v, want the driver's message with its time", got)
	}
	if !strings.Contains(log1.String(), `"driver event for a foreign task id"`) {
		t.Errorf("an event naming no task was not logged as dropped:\n%s", log1.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	log2 := &lockedBuf{}
	c2 := startClient(t, cfg(log2))
	mu.Lock()
	d2 := instances[len(instances)-1]
	mu.Unlock()
	d2.mu.Lock()
	calls := slices.Clone(d2.known)
	d2.mu.Unlock()
	if len(calls) != 1 || len(calls[0]) != 1 || !strings.HasPrefix(calls[0][0], a.ID+"/web/") {
		t.Errorf("Leftovers called with known %v, want once with the restored task's ID", calls)
	}
	if out := log2.String(); !strings.Contains(out, `level=WARN msg="leftover container not managed by drover" component=client driver=fake id=stray-container`) {
		t.Errorf("no WARN for the leftover in the log:\n%s", out)
	}
	testproc.Eventually(t, 15*time.Second, "reattached", func() bool {
		ar, _ := c2.runner(a.ID)
		s := ar.Alloc().TaskStates["web"]
		return s.State == api.TaskStateRunning && s.Events[len(s.Events)-1].Type == api.TaskReattached
	})
}
