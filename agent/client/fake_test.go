package client

// Test doubles: a fake task driver (until drivers/mock exists) and a fake
// server speaking the client->server node endpoints over real HTTP.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

type fakeDriver struct {
	mu    sync.Mutex
	tasks map[string]chan *drivers.ExitResult
	sigs  []string
}

var hostTasks = struct {
	sync.Mutex
	m map[string]chan *drivers.ExitResult // survives driver instances
}{m: map[string]chan *drivers.ExitResult{}}

func fakeFactory(drivers.Options) (drivers.Driver, error) {
	return &fakeDriver{tasks: map[string]chan *drivers.ExitResult{}}, nil
}

func (d *fakeDriver) Name() string { return "fake" }

// fakeUnhealthy flips the fake driver's fingerprint.
var fakeUnhealthy atomic.Bool

func (d *fakeDriver) Fingerprint(context.Context) *drivers.Fingerprint {
	if fakeUnhealthy.Load() {
		return &drivers.Fingerprint{Health: drivers.HealthUnhealthy, HealthDescription: "broken"}
	}
	return &drivers.Fingerprint{Health: drivers.HealthHealthy, Attributes: map[string]string{"driver.fake.version": "1.0"}}
}
func (d *fakeDriver) ValidateConfig(map[string]any) error { return nil }
func (d *fakeDriver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	ch := make(chan *drivers.ExitResult, 1)
	hostTasks.Lock()
	hostTasks.m[cfg.ID] = ch
	hostTasks.Unlock()
	d.mu.Lock()
	d.tasks[cfg.ID] = ch
	d.mu.Unlock()
	line := fmt.Sprintf("hello from %s\n", cfg.Name)
	if err := os.WriteFile(filepath.Join(cfg.LogDir, cfg.Name+".stdout.0"), []byte(line), 0o644); err != nil {
		return nil, err
	}
	if code, ok := cfg.Config["exit_code"].(float64); ok {
		ch <- &drivers.ExitResult{ExitCode: int(code)}
	}
	return &drivers.TaskHandle{Version: 1, Config: cfg, StartedAt: time.Now()}, nil
}
func (d *fakeDriver) ch(id string) (chan *drivers.ExitResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, ok := d.tasks[id]
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return ch, nil
}
func (d *fakeDriver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	ch, err := d.ch(id)
	if err != nil {
		return nil, err
	}
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case r := <-ch:
			ch <- r // keep it for later waiters
			out <- r
		case <-ctx.Done():
			close(out)
		}
	}()
	return out, nil
}
func (d *fakeDriver) StopTask(ctx context.Context, id string, _ time.Duration, _ string) error {
	ch, err := d.ch(id)
	if err != nil {
		return err
	}
	select {
	case ch <- &drivers.ExitResult{Signal: 15}:
	default:
	}
	return nil
}
func (d *fakeDriver) DestroyTask(ctx context.Context, id string, force bool) error {
	return d.StopTask(ctx, id, 0, "")
}
func (d *fakeDriver) RecoverTask(ctx context.Context, h *drivers.TaskHandle) error {
	hostTasks.Lock()
	ch, ok := hostTasks.m[h.Config.ID]
	hostTasks.Unlock()
	if !ok || len(ch) > 0 {
		return drivers.ErrRecoverFailed
	}
	d.mu.Lock()
	d.tasks[h.Config.ID] = ch
	d.mu.Unlock()
	return nil
}
func (d *fakeDriver) SignalTask(ctx context.Context, id, sig string) error {
	if _, err := d.ch(id); err != nil {
		return err
	}
	d.mu.Lock()
	d.sigs = append(d.sigs, sig)
	d.mu.Unlock()
	return nil
}

// fakeServer implements register, heartbeat, blocking allocations and
// the alloc update endpoint.
type fakeServer struct {
	t    *testing.T
	srv  *httptest.Server
	fail atomic.Bool // answer 500 to everything
	// lagStale: stale client-allocs reads answer at once as a follower
	// far behind would (index 1, no allocs); staleNotFound: they answer
	// node not found (a follower before the registration); staleReads
	// and leaderReads count the reads with and without ?stale.
	lagStale, staleNotFound atomic.Bool
	staleReads, leaderReads atomic.Int64
	// emptyFetches: this many next fetches answer no allocs, as a
	// leader behind the server that listed them would.
	emptyFetches atomic.Int32
	ttl          time.Duration
	others       []string

	mu         sync.Mutex
	changed    chan struct{}
	index      uint64
	node       *api.Node
	registers  int
	heartbeats int
	secrets    []string
	allocs     map[string]*api.Allocation
	updates    [][]*api.Allocation
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{t: t, ttl: time.Second, index: 1, changed: make(chan struct{}), allocs: map[string]*api.Allocation{}}
	m := http.NewServeMux()
	m.HandleFunc("PUT /v1/node/register", f.register)
	m.HandleFunc("PUT /v1/node/{id}/heartbeat", f.heartbeat)
	m.HandleFunc("GET /v1/node/{id}/client-allocs", f.clientAllocs)
	m.HandleFunc("POST /v1/node/{id}/allocations/fetch", f.fetch)
	m.HandleFunc("PUT /v1/node/{id}/allocations/update", f.update)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.fail.Load() {
			http.Error(w, `{"error":{"code":"internal","message":"down"}}`, 500)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) addr() string { return f.srv.URL }

func (f *fakeServer) bump() {
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeServer) register(w http.ResponseWriter, r *http.Request) {
	var req api.NodeRegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.node = req.Node
	f.registers++
	f.bump()
	idx := f.index
	f.mu.Unlock()
	json.NewEncoder(w).Encode(api.NodeRegisterResponse{HeartbeatTTL: f.ttl, Index: idx, Servers: append([]string{f.addr()}, f.others...)})
}

func (f *fakeServer) heartbeat(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.heartbeats++
	f.secrets = append(f.secrets, r.Header.Get(api.NodeSecretHeader))
	known := f.node != nil && f.node.ID == r.PathValue("id")
	f.mu.Unlock()
	if !known {
		w.WriteHeader(404)
		json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrNodeNotFound})
		return
	}
	json.NewEncoder(w).Encode(api.NodeRegisterResponse{HeartbeatTTL: f.ttl})
}

func (f *fakeServer) clientAllocs(w http.ResponseWriter, r *http.Request) {
	var want uint64
	fmt.Sscan(r.URL.Query().Get("index"), &want)
	if !r.URL.Query().Has("stale") {
		f.leaderReads.Add(1)
	} else if f.staleReads.Add(1); f.staleNotFound.Load() {
		w.WriteHeader(404)
		json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrNodeNotFound})
		return
	} else if f.lagStale.Load() {
		w.Header().Set(api.HeaderIndex, "1")
		json.NewEncoder(w).Encode(api.NodeClientAllocsResponse{Allocs: map[string]uint64{}, Index: 1})
		return
	}
	for {
		f.mu.Lock()
		idx, ch := f.index, f.changed
		if idx > want {
			out := api.NodeClientAllocsResponse{Allocs: map[string]uint64{}, Index: idx}
			for _, a := range f.allocs {
				out.Allocs[a.ID] = a.AllocModifyIndex
			}
			f.mu.Unlock()
			w.Header().Set(api.HeaderIndex, fmt.Sprint(idx))
			json.NewEncoder(w).Encode(out)
			return
		}
		f.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeServer) fetch(w http.ResponseWriter, r *http.Request) {
	var req api.NodeAllocFetchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	out := api.NodeAllocFetchResponse{Index: f.index}
	if f.emptyFetches.Add(-1) >= 0 {
		req.AllocIDs = nil
	}
	for _, id := range req.AllocIDs {
		if a := f.allocs[id]; a != nil {
			out.Allocs = append(out.Allocs, a)
		}
	}
	f.mu.Unlock()
	json.NewEncoder(w).Encode(out)
}

func (f *fakeServer) update(w http.ResponseWriter, r *http.Request) {
	var req api.NodeAllocUpdateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.updates = append(f.updates, req.Allocs)
	for _, u := range req.Allocs {
		if a := f.allocs[u.ID]; a != nil {
			c := *a
			c.ClientStatus, c.TaskStates = u.ClientStatus, u.TaskStates
			f.allocs[u.ID] = &c
		}
	}
	f.mu.Unlock()
	w.Write([]byte("{}"))
}

func (f *fakeServer) putAlloc(a *api.Allocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.AllocModifyIndex = f.index + 1
	f.allocs[a.ID] = a
	f.bump()
}

func (f *fakeServer) deleteAlloc(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.allocs, id)
	f.bump()
}

// lastStatus is the latest client status the server got for an alloc.
func (f *fakeServer) lastStatus(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.updates) - 1; i >= 0; i-- {
		for _, a := range f.updates[i] {
			if a.ID == id {
				return a.ClientStatus
			}
		}
	}
	return ""
}
