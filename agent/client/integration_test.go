package client_test

// The client against a real in-memory dev server behind the real HTTP
// API: register, blocking alloc watch, task run on drivers/mock, status
// updates, logs through the API, and a job stop.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover/drover/agent/client"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// lazyClient lets the HTTP server exist before the client does.
type lazyClient struct{ c atomic.Pointer[client.Client] }

func (l *lazyClient) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.c.Load().Handler().ServeHTTP(w, r) })
}
func (l *lazyClient) HasAlloc(id string) bool { c := l.c.Load(); return c != nil && c.HasAlloc(id) }

func TestClientWithRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server")
	}
	log := slog.New(slog.DiscardHandler)
	s := testcluster.Server(t, server.Config{Logger: log, NodeName: "srv"})
	lazy := &lazyClient{}
	h, err := agenthttp.New(agenthttp.Config{Server: serverstate.Bind(s), Client: lazy, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)

	c, err := client.New(&client.Config{DataDir: t.TempDir(), Servers: []string{ts.URL}, NodeName: "n1",
		HTTPAddr: ts.Listener.Addr().String(), DevMode: true, Logger: log,
		Drivers: map[string]drivers.Factory{mock.Name: mock.New}})
	if err != nil {
		t.Fatal(err)
	}
	lazy.c.Store(c)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Shutdown(ctx)
	})
	api1 := api.NewClient(ts.URL)
	ctx := context.Background()
	testcluster.WaitState(t, s, 20*time.Second, "node ready", func() bool {
		n, _, err := api1.Node(ctx, c.NodeID(), nil)
		return err == nil && n.Status == api.NodeStatusReady && n.Attributes["driver.mock_driver"] == "1"
	})

	job := &api.Job{ID: "hello", Name: "hello", Type: api.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: mock.Name,
			Config:    map[string]any{"run_for": "1h", "stdout_string": "hello from mock\n"},
			Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if _, err := api1.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatalf("register job: %v", err)
	}
	var allocID string
	testcluster.WaitState(t, s, 20*time.Second, "alloc running on the server", func() bool {
		as, _, err := api1.JobAllocations(ctx, "hello", nil)
		if err != nil || len(as) != 1 {
			return false
		}
		allocID = as[0].ID
		return as[0].ClientStatus == api.AllocClientStatusRunning && as[0].TaskStates["t"] != nil
	})
	rc, err := api1.Logs(ctx, allocID, "t", "stdout", false, "", 0)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(b), "hello from mock") {
		t.Errorf("logs through the API = %q", b)
	}
	if _, err := api1.DeregisterJob(ctx, "hello", false, nil); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitState(t, s, 20*time.Second, "alloc complete on the server", func() bool {
		a, _, err := api1.Allocation(ctx, allocID, nil)
		return err == nil && a.ClientStatus == api.AllocClientStatusComplete
	})
}
