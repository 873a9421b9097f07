package http_test

import (
	"context"
	"errors"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// Native services over HTTP: the alloc's node registers instances with its
// secret (another secret is refused), /v1/services groups them with their
// tags, /v1/service/{name} lists them and blocks until a change, an
// operator deletes one, and the alloc's completion removes the rest.
func TestServicesHTTP(t *testing.T) {
	a := newTestAPI(t)
	n := testNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	reg := a.register(webJob(2))
	if ev := a.waitEval(reg.EvalID); ev.Status != api.EvalStatusComplete {
		t.Fatalf("eval %s", ev.Status)
	}
	var allocs []*api.AllocListStub
	a.ok("GET", "/v1/job/web/allocations", nil, &allocs)
	if len(allocs) != 2 {
		t.Fatalf("%d allocs, want 2", len(allocs))
	}
	c := api.NewClient(a.ts.URL)
	c.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	instance := func(i int) *api.ServiceRegistration {
		return &api.ServiceRegistration{ID: "_nomad-task-" + allocs[i].ID + "-web", ServiceName: "web", AllocID: allocs[i].ID,
			Address: "127.0.0.1", Port: 8000 + i, Tags: []string{"v1", []string{"blue", "green"}[i]}}
	}
	ctx := context.Background()
	if _, err := c.UpdateNodeServices(ctx, n.ID, &api.NodeServicesRequest{Upserts: []*api.ServiceRegistration{instance(0), instance(1)}}); err != nil {
		t.Fatal(err)
	}
	bad := api.NewClient(a.ts.URL)
	bad.Headers = nethttp.Header{api.NodeSecretHeader: {"wrong"}}
	if _, err := bad.UpdateNodeServices(ctx, n.ID, &api.NodeServicesRequest{Deletes: []string{instance(0).ID}}); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("a write with the wrong secret: %v, want permission denied", err)
	}

	var list []*api.ServiceRegistrationListStubs
	a.ok("GET", "/v1/services", nil, &list)
	if len(list) != 1 || list[0].Namespace != api.DefaultNamespace || len(list[0].Services) != 1 ||
		list[0].Services[0].ServiceName != "web" || len(list[0].Services[0].Tags) != 3 {
		t.Fatalf("GET /v1/services = %+v", list)
	}
	var regs []*api.ServiceRegistration
	r := a.ok("GET", "/v1/service/web", nil, &regs)
	if len(regs) != 2 || regs[0].JobID != "web" || regs[0].NodeID != n.ID || regs[0].Datacenter != "dc1" {
		t.Fatalf("GET /v1/service/web = %+v", regs)
	}
	a.ok("GET", "/v1/service/nope", nil, &regs)
	if len(regs) != 0 {
		t.Errorf("unknown service: %+v, want an empty list", regs)
	}

	done := make(chan []*api.ServiceRegistration, 1)
	go func() {
		var got []*api.ServiceRegistration
		a.ok("GET", "/v1/service/web?wait=10s&index="+itoa(headerIndex(t, r)), nil, &got)
		done <- got
	}()
	a.ok("DELETE", "/v1/service/web/"+instance(1).ID, nil, nil)
	select {
	case got := <-done:
		if len(got) != 1 || got[0].AllocID != allocs[0].ID {
			t.Fatalf("blocking read answered %+v, want the remaining instance", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("blocking read not woken by a delete")
	}
	a.fails("DELETE", "/v1/service/web/"+instance(1).ID, nil, 404, api.ErrNotFound.Code)

	a.reportTask(n, allocs[0].ID, api.AllocClientStatusComplete, time.Now(), time.Now())
	a.ok("GET", "/v1/service/web", nil, &regs)
	if len(regs) != 0 {
		t.Errorf("after the alloc completed: %+v, want none", regs)
	}
	a.ok("GET", "/v1/services", nil, &list)
	if len(list) != 0 {
		t.Errorf("GET /v1/services after all went: %+v", list)
	}
}
