package http_test

import (
	"fmt"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

// testNode is a node as a client would register it, with a healthy exec driver.
func testNode(id string) *api.Node {
	return &api.Node{
		ID: id, SecretID: "secret-" + id, Name: "node-" + id[:4], Datacenter: "dc1", NodePool: "default",
		HTTPAddr: "127.0.0.1:1", Status: api.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1", "unique.network.ip-address": "127.0.0.1", "cpu.arch": "amd64"},
		NodeResources: &api.NodeResources{
			Cpu: api.NodeCpuResources{CpuShares: 8000}, Memory: api.NodeMemoryResources{MemoryMB: 8192},
			Disk: api.NodeDiskResources{DiskMB: 100000},
		},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true, UpdateTime: time.Now()}},
	}
}

const nodeID = "f0e1d2c3-0000-4000-8000-000000000001"

func TestNodeRoutes(t *testing.T) {
	a := newTestAPI(t)
	n := testNode(nodeID)
	var rr api.NodeRegisterResponse
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, &rr)
	if rr.HeartbeatTTL <= 0 {
		t.Errorf("register answered TTL %v, want > 0", rr.HeartbeatTTL)
	}

	var stubs []*api.NodeListStub
	a.ok("GET", "/v1/nodes", nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != nodeID {
		t.Fatalf("GET /v1/nodes = %+v, want the node", stubs)
	}
	a.ok("GET", "/v1/nodes?prefix=f0e1", nil, &stubs)
	if len(stubs) != 1 {
		t.Errorf("?prefix=f0e1 = %d nodes, want 1", len(stubs))
	}
	a.ok("GET", "/v1/nodes?prefix=aaaa", nil, &stubs)
	if len(stubs) != 0 {
		t.Errorf("?prefix=aaaa = %d nodes, want 0", len(stubs))
	}

	var got api.Node
	r := a.ok("GET", "/v1/node/"+nodeID, nil, &got)
	if got.ID != nodeID || got.Name != n.Name {
		t.Errorf("GET node = %+v", got)
	}
	if strings.Contains(string(r.body), n.SecretID) {
		t.Errorf("GET /v1/node/{id} leaks the node secret")
	}

	// Heartbeat: the secret is required.
	req, _ := nethttp.NewRequest("PUT", a.ts.URL+"/v1/node/"+nodeID+"/heartbeat", strings.NewReader(`{}`))
	req.Header.Set(api.NodeSecretHeader, n.SecretID)
	hr, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != 200 {
		t.Errorf("heartbeat with the secret = %d, want 200", hr.StatusCode)
	}
	r = a.do("PUT", "/v1/node/"+nodeID+"/heartbeat", `{}`)
	if r.status/100 != 4 {
		t.Errorf("heartbeat without the secret = %d %s, want a 4xx", r.status, r.body)
	}
	a.fails("PUT", "/v1/node/nope/heartbeat", `{}`, 404, "node_not_found")

	var allocs []*api.Allocation
	r = a.ok("GET", "/v1/node/"+nodeID+"/allocations", nil, &allocs)
	if len(allocs) != 0 || string(r.body) == "null\n" {
		t.Errorf("node allocations = %s, want []", r.body)
	}

	var ur api.NodeUpdateResponse
	a.ok("POST", "/v1/node/"+nodeID+"/eligibility", &api.NodeUpdateEligibilityRequest{Eligibility: api.NodeSchedulingIneligible}, &ur)
	a.ok("GET", "/v1/node/"+nodeID, nil, &got)
	if got.SchedulingEligibility != api.NodeSchedulingIneligible {
		t.Errorf("eligibility = %q, want ineligible", got.SchedulingEligibility)
	}
	a.ok("POST", "/v1/node/"+nodeID+"/eligibility", &api.NodeUpdateEligibilityRequest{Eligibility: api.NodeSchedulingEligible}, &ur)

	a.ok("POST", "/v1/node/"+nodeID+"/drain", &api.NodeUpdateDrainRequest{DrainSpec: &api.DrainSpec{Deadline: time.Hour}}, &ur)
	a.ok("GET", "/v1/node/"+nodeID, nil, &got)
	// With no allocations the drain may already be complete; either way the
	// node took no new work and recorded the drain.
	if got.SchedulingEligibility != api.NodeSchedulingIneligible || (got.LastDrain == nil && !got.Drain) {
		t.Errorf("after drain: eligibility %q, Drain %v, LastDrain %v; want ineligible and a drain recorded", got.SchedulingEligibility, got.Drain, got.LastDrain)
	}
	a.ok("POST", "/v1/node/"+nodeID+"/drain", &api.NodeUpdateDrainRequest{MarkEligible: true}, &ur)
	a.ok("GET", "/v1/node/"+nodeID, nil, &got)
	if got.Drain || got.SchedulingEligibility != api.NodeSchedulingEligible {
		t.Errorf("after drain disable: Drain=%v eligibility %q, want not draining and eligible", got.Drain, got.SchedulingEligibility)
	}
	a.fails("POST", "/v1/node/nope/drain", &api.NodeUpdateDrainRequest{}, 404, "node_not_found")
	a.fails("POST", "/v1/node/nope/eligibility", &api.NodeUpdateEligibilityRequest{Eligibility: "eligible"}, 404, "node_not_found")
}

// TestAllocAndEvalRoutes places a job on a registered node and reads it
// back through every allocation and evaluation route.
func TestAllocAndEvalRoutes(t *testing.T) {
	a := newTestAPI(t)
	n := testNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	reg := a.register(webJob(2))
	ev := a.waitEval(reg.EvalID)
	if ev.Status != api.EvalStatusComplete || len(ev.FailedTGAllocs) != 0 {
		t.Fatalf("eval = %s %+v, want complete without failures", ev.Status, ev.FailedTGAllocs)
	}

	var stubs []*api.AllocListStub
	a.ok("GET", "/v1/allocations", nil, &stubs)
	if len(stubs) != 2 {
		t.Fatalf("GET /v1/allocations = %d, want 2", len(stubs))
	}
	a.ok("GET", "/v1/job/web/allocations", nil, &stubs)
	if len(stubs) != 2 || stubs[0].NodeID != nodeID {
		t.Fatalf("job allocations = %+v, want 2 on the node", stubs)
	}
	var evStubs []*api.AllocListStub
	a.ok("GET", "/v1/evaluation/"+reg.EvalID+"/allocations", nil, &evStubs)
	if len(evStubs) != 2 {
		t.Errorf("eval allocations = %d, want 2", len(evStubs))
	}
	var evals []*api.Evaluation
	a.ok("GET", "/v1/evaluations", nil, &evals)
	if len(evals) == 0 {
		t.Errorf("GET /v1/evaluations = none")
	}
	var e api.Evaluation
	a.ok("GET", "/v1/evaluation/"+reg.EvalID[:8], nil, &e)
	if e.ID != reg.EvalID {
		t.Errorf("eval by prefix = %s, want %s", e.ID, reg.EvalID)
	}

	id := stubs[0].ID
	var al api.Allocation
	a.ok("GET", "/v1/allocation/"+id, nil, &al)
	if al.ID != id || al.Job == nil || al.JobID != "web" {
		t.Fatalf("GET allocation = %+v, want %s of job web with its Job", al, id)
	}
	a.ok("GET", "/v1/allocation/"+id[:8], nil, &al)
	if al.ID != id {
		t.Errorf("alloc by prefix %s = %s, want %s", id[:8], al.ID, id)
	}
	a.ok("GET", "/v1/allocations?prefix="+id[:8], nil, &stubs)
	if len(stubs) != 1 {
		t.Errorf("?prefix= = %d allocs, want 1", len(stubs))
	}
	var full []*api.Allocation
	a.ok("GET", "/v1/node/"+nodeID+"/allocations", nil, &full)
	if len(full) != 2 || full[0].Job == nil {
		t.Errorf("node allocations = %d (with Job: %v), want 2 full allocs", len(full), len(full) > 0 && full[0].Job != nil)
	}
	// What clients poll: IDs with AllocModifyIndex, then a fetch of those
	// that moved (another node's allocs and unknown IDs are left out).
	var ids api.NodeClientAllocsResponse
	a.ok("GET", "/v1/node/"+nodeID+"/client-allocs", nil, &ids)
	if len(ids.Allocs) != 2 || ids.Allocs[full[0].ID] != full[0].AllocModifyIndex || ids.Index == 0 {
		t.Errorf("client-allocs = %+v, want both allocs with their AllocModifyIndex", ids)
	}
	var fetched api.NodeAllocFetchResponse
	a.ok("POST", "/v1/node/"+nodeID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{full[1].ID, "no-such-alloc"}}, &fetched)
	if len(fetched.Allocs) != 1 || fetched.Allocs[0].ID != full[1].ID || fetched.Allocs[0].Job == nil {
		t.Errorf("fetch = %+v, want %s in full", fetched, full[1].ID)
	}
	// Compact, as clients ask: the job once, no placement metrics.
	if full[0].Metrics == nil {
		t.Fatal("stored alloc without Metrics: the compact check below would prove nothing")
	}
	var compact api.NodeAllocFetchResponse
	a.ok("POST", "/v1/node/"+nodeID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{full[0].ID, full[1].ID}, Compact: true}, &compact)
	if len(compact.Allocs) != 2 || len(compact.Jobs) != 1 || !slices.Equal(compact.JobIndexes, []int{0, 0}) ||
		compact.Allocs[0].Job != nil || compact.Allocs[0].Metrics != nil || compact.Allocs[1].Metrics != nil {
		t.Errorf("compact fetch = %d allocs (Job %v, Metrics %v), %d jobs, indexes %v; want 2 allocs without Job and Metrics, 1 job, [0 0]",
			len(compact.Allocs), compact.Allocs[0].Job != nil, compact.Allocs[0].Metrics != nil, len(compact.Jobs), compact.JobIndexes)
	}
	if err := compact.Expand(); err != nil || compact.Allocs[0].Job == nil || compact.Allocs[0].Job != compact.Allocs[1].Job ||
		compact.Allocs[1].Job.ID != "web" || compact.Allocs[1].Job.Version != full[1].Job.Version {
		t.Errorf("expanded compact fetch: %v; want both allocs with job web", err)
	}
	a.ok("POST", "/v1/node/other-node/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{full[1].ID}}, &fetched)
	if len(fetched.Allocs) != 0 {
		t.Errorf("another node fetched %s", full[1].ID)
	}
	if r := a.do("POST", "/v1/node/"+nodeID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: make([]string, api.MaxAllocFetch+1)}); r.status != 400 {
		t.Errorf("fetch of %d IDs = %d, want 400", api.MaxAllocFetch+1, r.status)
	}
	// A fetch naming an index the server has not applied waits for it (the
	// next write here), and one it does not reach in time is unavailable.
	next := a.srv.State().LatestIndex() + 1
	waited := make(chan *resp, 1)
	go func() {
		waited <- a.do("POST", "/v1/node/"+nodeID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{full[1].ID}, MinIndex: next})
	}()
	select {
	case r := <-waited:
		t.Fatalf("fetch for index %d answered %d before the server applied it", next, r.status)
	default:
	}
	a.ok("PUT", "/v1/namespace/later", api.Namespace{Name: "later"}, nil) // a write that moves no alloc
	select {
	case r := <-waited:
		if r.status != 200 {
			t.Errorf("fetch for index %d = %d %s, want 200 once applied", next, r.status, r.body)
		}
	case <-time.After(api.MaxFetchIndexWait + 5*time.Second):
		t.Fatalf("fetch for index %d did not answer after the write", next)
	}
	defer agenthttp.SetFetchIndexWait(time.Millisecond)()
	if r := a.do("POST", "/v1/node/"+nodeID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{full[1].ID}, MinIndex: 1 << 40}); r.status != 503 {
		t.Errorf("fetch for an index never applied = %d %s, want 503", r.status, r.body)
	}

	// The client reports one running.
	upd := &api.Allocation{ID: id, ClientStatus: api.AllocClientStatusRunning,
		TaskStates: map[string]*api.TaskState{"srv": {State: api.TaskStateRunning}}}
	req, _ := nethttp.NewRequest("PUT", a.ts.URL+"/v1/node/"+nodeID+"/allocations/update",
		strings.NewReader(mustJSON(t, &api.NodeAllocUpdateRequest{Allocs: []*api.Allocation{upd}})))
	req.Header.Set(api.NodeSecretHeader, n.SecretID)
	ur, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ur.Body.Close()
	if ur.StatusCode != 200 {
		t.Fatalf("allocations/update = %d, want 200", ur.StatusCode)
	}
	a.ok("GET", "/v1/allocation/"+id, nil, &al)
	if al.ClientStatus != api.AllocClientStatusRunning {
		t.Errorf("after client update, ClientStatus = %q, want running", al.ClientStatus)
	}
	// That report moves no AllocModifyIndex: a long poll from before it
	// runs to its wait and answers the same index (an earlier answer
	// would carry a larger one).
	var polled api.NodeClientAllocsResponse
	poll := fmt.Sprintf("/v1/node/%s/client-allocs?index=%d&wait=200ms", nodeID, ids.Index)
	a.ok("GET", poll, nil, &polled)
	if polled.Index != ids.Index || polled.Allocs[id] != ids.Allocs[id] {
		t.Errorf("client-allocs after the client's own update = %+v, want index %d unchanged", polled, ids.Index)
	}

	var sr api.AllocStopResponse
	a.ok("POST", "/v1/allocation/"+id+"/stop", `{}`, &sr)
	if sr.EvalID == "" {
		t.Errorf("stop answered %+v, want an EvalID", sr)
	}
	a.ok("GET", "/v1/allocation/"+id, nil, &al)
	if al.DesiredTransition.Migrate == nil || !*al.DesiredTransition.Migrate {
		if al.DesiredStatus != api.AllocDesiredStatusStop {
			t.Errorf("after stop: desired %q transition %+v, want a stop or migrate", al.DesiredStatus, al.DesiredTransition)
		}
	}
	// The stop is the server's change: the same long poll answers it.
	a.ok("GET", strings.Replace(poll, "200ms", "10s", 1), nil, &polled)
	if polled.Index <= ids.Index || polled.Allocs[id] <= ids.Allocs[id] {
		t.Errorf("client-allocs after the stop = %+v, want %s past index %d", polled, id, ids.Index)
	}
}
