package services

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

// recorder is the servers' side of the registrar in these tests: it
// applies each batch to a map, failing the first fail batches.
type recorder struct {
	mu    sync.Mutex
	regs  map[string]*api.ServiceRegistration
	fail  int
	calls int
}

func (r *recorder) send(_ context.Context, req *api.NodeServicesRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail > 0 {
		r.fail--
		return context.DeadlineExceeded
	}
	for _, id := range req.Deletes {
		delete(r.regs, id)
	}
	for _, g := range req.Upserts {
		c := *g
		r.regs[g.ID] = &c
	}
	return nil
}

func (r *recorder) snapshot() map[string]*api.ServiceRegistration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*api.ServiceRegistration{}
	for k, v := range r.regs {
		c := *v
		out[k] = &c
	}
	return out
}

func startRegistrar(t *testing.T, rec *recorder) *Registrar {
	return startRegistrarClock(t, rec, nil)
}

func startRegistrarClock(t *testing.T, rec *recorder, clk clock.Clock) *Registrar {
	r := NewRegistrar(rec.send, clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// The registrar sends what changed, retries failed batches and deletes
// what an alloc no longer wants.
func TestRegistrarSyncsAndRetries(t *testing.T) {
	rec := &recorder{regs: map[string]*api.ServiceRegistration{}, fail: 2}
	r := startRegistrar(t, rec)
	r.SetAlloc("a1", []*api.ServiceRegistration{{ID: "s1", ServiceName: "web", AllocID: "a1", Port: 1}, {ID: "s2", ServiceName: "web", AllocID: "a1", Port: 2}})
	<-r.Idle()
	if got := rec.snapshot(); len(got) != 2 || got["s2"].Port != 2 {
		t.Fatalf("after set: %+v", got)
	}
	r.SetAlloc("a1", []*api.ServiceRegistration{{ID: "s1", ServiceName: "web", AllocID: "a1", Port: 1, Health: api.ServiceHealthCritical}})
	<-r.Idle()
	got := rec.snapshot()
	if len(got) != 1 || got["s1"].Health != api.ServiceHealthCritical {
		t.Fatalf("after update: %+v", got)
	}
	calls := rec.calls
	r.SetAlloc("a1", []*api.ServiceRegistration{{ID: "s1", ServiceName: "web", AllocID: "a1", Port: 1, Health: api.ServiceHealthCritical}})
	<-r.Idle()
	if rec.calls != calls {
		t.Errorf("an unchanged set sent %d batches", rec.calls-calls)
	}
	r.RemoveAlloc("a1")
	<-r.Idle()
	if got := rec.snapshot(); len(got) != 0 {
		t.Errorf("after remove: %+v", got)
	}
	rec.regs = map[string]*api.ServiceRegistration{} // a server that lost its state
	r.SetAlloc("a2", []*api.ServiceRegistration{{ID: "s3", ServiceName: "db", AllocID: "a2"}})
	<-r.Idle()
	rec.mu.Lock()
	rec.regs = map[string]*api.ServiceRegistration{}
	rec.mu.Unlock()
	r.Resync()
	<-r.Idle()
	if got := rec.snapshot(); len(got) != 1 || got["s3"] == nil {
		t.Errorf("after resync: %+v", got)
	}
}

// Failed batches are retried after a backoff on the registrar's clock:
// 250 ms, then doubling.
func TestRegistrarBackoffOnClock(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	rec := &recorder{regs: map[string]*api.ServiceRegistration{}, fail: 2}
	r := startRegistrarClock(t, rec, clk)
	r.SetAlloc("a1", []*api.ServiceRegistration{{ID: "s1", ServiceName: "web", AllocID: "a1", Port: 1}})
	for _, want := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond} {
		if err := clk.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
			t.Fatalf("retry never waited on the clock: %v", err)
		}
		if d, _ := clk.NextIn(); d != want {
			t.Fatalf("retry in %v, want %v", d, want)
		}
		clk.Advance(want)
	}
	<-r.Idle()
	if got := rec.snapshot(); len(got) != 1 || rec.calls != 3 {
		t.Fatalf("after two failures: %d calls, registrations %+v; want 3 calls, s1", rec.calls, got)
	}
}

func port(t *testing.T, addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An alloc's services register while their tasks run, with the alloc's
// port; an http check's results (thresholds applied) move the service's
// health; check_restart restarts the task after limit failures in a row;
// stopping the task deregisters its service.
func TestAllocServicesChecks(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	webPort, dbPort := port(t, srv.Listener.Addr().String()), port(t, ln.Addr().String())
	job := &api.Job{ID: "j", Namespace: "default", TaskGroups: []*api.TaskGroup{{Name: "g",
		Services: []*api.Service{{Name: "db", PortLabel: "db", Checks: []*api.ServiceCheck{{Type: "tcp", Interval: 10 * time.Millisecond, Timeout: time.Second}}}},
		Tasks: []*api.Task{{Name: "web", Services: []*api.Service{{Name: "${JOB}-web", PortLabel: "http", Tags: []string{"v1"},
			Checks: []*api.ServiceCheck{{Name: "alive", Type: "http", Path: "/health", Interval: 10 * time.Millisecond, Timeout: time.Second,
				SuccessBeforePassing: 2, CheckRestart: &api.CheckRestart{Limit: 3}}}}}}}}}}
	alloc := &api.Allocation{ID: "a1", Namespace: "default", JobID: "j", TaskGroup: "g", NodeID: "n1", Job: job,
		AllocatedResources: &api.AllocatedResources{Shared: api.AllocatedSharedResources{Ports: []api.AllocatedPort{
			{Label: "http", Value: webPort}, {Label: "db", Value: dbPort}}}}}
	node := &api.Node{ID: "n1", Datacenter: "dc1", Attributes: map[string]string{"unique.network.ip-address": "127.0.0.1"}}
	rec := &recorder{regs: map[string]*api.ServiceRegistration{}}
	reg := startRegistrar(t, rec)
	var restarts atomic.Int32
	s := NewAlloc(AllocConfig{Alloc: alloc, Node: node, Registrar: reg,
		Interpolate: func(v string) string {
			if v == "${JOB}-web" {
				return "j-web"
			}
			return v
		},
		Restart: func(_ context.Context, task, _ string) error {
			if task == "web" {
				restarts.Add(1)
			}
			return nil
		}})
	t.Cleanup(s.Deregister)
	if got := s.Names(); len(got) != 2 || got[0] != "db" || got[1] != "j-web" {
		t.Fatalf("names %v", got)
	}
	find := func(name string) *api.ServiceRegistration {
		for _, g := range rec.snapshot() {
			if g.ServiceName == name {
				return g
			}
		}
		return nil
	}
	s.Update(map[string]time.Time{"web": time.Now()})
	testproc.Eventually(t, 10*time.Second, "both services registered", func() bool { return find("db") != nil && find("j-web") != nil })
	if w := find("j-web"); w.Port != webPort || w.Address != "127.0.0.1" || w.Datacenter != "dc1" || len(w.Tags) != 1 {
		t.Errorf("web registration %+v", w)
	}
	testproc.Eventually(t, 10*time.Second, "db passing", func() bool { return find("db").Health == api.ServiceHealthPassing })
	// The failing http check restarts web every 3 results, and keeps it critical.
	testproc.Eventually(t, 10*time.Second, "check_restart", func() bool { return restarts.Load() >= 2 })
	if h := find("j-web").Health; h != api.ServiceHealthCritical {
		t.Errorf("web health %q while failing", h)
	}
	healthy.Store(true)
	testproc.Eventually(t, 10*time.Second, "web passing", func() bool { return find("j-web").Health == api.ServiceHealthPassing })
	var res *api.CheckResult
	for _, r := range s.Checks() {
		if r.Check == "alive" {
			res = r
		}
	}
	if res == nil || res.Status != api.CheckSuccess || res.StatusCode != 200 || res.Task != "web" || res.Service != "j-web" {
		t.Errorf("alive result %+v", res)
	}
	n := restarts.Load()
	s.Update(map[string]time.Time{})
	testproc.Eventually(t, 10*time.Second, "deregistered with the task", func() bool { return len(rec.snapshot()) == 0 })
	if restarts.Load() > n+1 {
		t.Errorf("restarts went on after passing: %d -> %d", n, restarts.Load())
	}
}

// gRPC checks ask the standard health service: SERVING passes, anything
// else (or an unknown service) is critical; tcp checks pass on connect.
func TestGRPCAndTCPChecks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("model", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("draining", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	addr := ln.Addr().String()
	for svc, want := range map[string]string{"model": api.ServiceHealthPassing, "draining": api.ServiceHealthCritical, "unknown": api.ServiceHealthCritical} {
		r := runCheck(context.Background(), &api.ServiceCheck{Type: "grpc", GRPCService: svc, Timeout: 5 * time.Second}, target{addr: addr})
		if r.health != want {
			t.Errorf("grpc %s: %+v, want %s", svc, r, want)
		}
	}
	if r := runCheck(context.Background(), &api.ServiceCheck{Type: "tcp", Timeout: time.Second}, target{addr: addr}); r.health != api.ServiceHealthPassing {
		t.Errorf("tcp: %+v", r)
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln2.Addr().String()
	ln2.Close()
	if r := runCheck(context.Background(), &api.ServiceCheck{Type: "tcp", Timeout: time.Second}, target{addr: closed}); r.health != api.ServiceHealthCritical {
		t.Errorf("tcp to a closed port: %+v", r)
	}
}
