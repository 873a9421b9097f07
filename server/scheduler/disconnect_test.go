package scheduler

import (
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// TestDisconnectedAllocsReplacedNotStopped walks one group through a
// disconnect: unknown allocs get replacements and are not stopped, a
// second eval changes nothing, and on reconnect the older copies stop.
func TestDisconnectedAllocsReplacedNotStopped(t *testing.T) {
	st := newMemState()
	a, b := testNode("a", "dc1", 4000, 8192), testNode("b", "dc1", 4000, 8192)
	st.addNode(a)
	job := testJob("j", api.JobTypeService, 2, 100, 64)
	job.TaskGroups[0].MaxClientDisconnect = time.Minute
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	orig := st.liveAllocs("default", "j")
	if len(orig) != 2 {
		t.Fatalf("placed %d, want 2", len(orig))
	}
	// Node a misses its heartbeat: disconnected, its allocs unknown.
	st.addNode(b)
	a.Status = api.NodeStatusDisconnected
	for _, o := range orig {
		c := *o
		c.ClientStatus = api.AllocClientStatusUnknown
		st.upsertAlloc(&c)
	}
	res, err = Schedule(st, testEval(job, 2), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Plan.NodeUpdate["node-a"]) + len(res.Plan.NodeAllocation["node-a"]); n != 0 {
		t.Errorf("plan writes %d allocs on the disconnected node, want none (no stop)", n)
	}
	repl := res.Plan.NodeAllocation["node-b"]
	if len(repl) != 2 {
		t.Fatalf("replacements on b = %d, want 2", len(repl))
	}
	prev := map[string]string{}
	for _, r := range repl {
		prev[r.PreviousAllocation] = r.Name
	}
	for _, o := range orig {
		if prev[o.ID] != o.Name {
			t.Errorf("unknown alloc %s (%s) replaced by %q, want a replacement with the same name", o.ID, o.Name, prev[o.ID])
		}
	}
	st.apply(res.Plan)
	// Another eval while disconnected: nothing to do.
	res, err = Schedule(st, testEval(job, 3), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.NodeAllocation)+len(res.Plan.NodeUpdate) != 0 {
		t.Errorf("second eval while disconnected: plan %+v %+v, want empty", res.Plan.NodeAllocation, res.Plan.NodeUpdate)
	}
	// The node is back but its client has not reported yet: still nothing.
	a.Status = api.NodeStatusReady
	res, _ = Schedule(st, testEval(job, 4), Options{Now: testNow})
	if len(res.Plan.NodeAllocation)+len(res.Plan.NodeUpdate) != 0 {
		t.Errorf("reconnected, unreported: plan %+v %+v, want empty", res.Plan.NodeAllocation, res.Plan.NodeUpdate)
	}
	// The client reports them running: the older copies stop.
	for _, o := range orig {
		c := *st.allocs[o.ID]
		c.ClientStatus = api.AllocClientStatusRunning
		st.upsertAlloc(&c)
	}
	ev := testEval(job, 5)
	ev.TriggeredBy = api.EvalTriggerReconnect
	res, err = Schedule(st, ev, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	stops := res.Plan.NodeUpdate["node-a"]
	if len(stops) != 2 || len(res.Plan.NodeAllocation) != 0 || len(res.Plan.NodeUpdate) != 1 {
		t.Fatalf("reconnect plan: stops %+v, placements %+v; want the 2 originals on a stopped, nothing else", res.Plan.NodeUpdate, res.Plan.NodeAllocation)
	}
	st.apply(res.Plan)
	live := st.liveAllocs("default", "j")
	if len(live) != 2 || live[0].NodeID != "node-b" || live[1].NodeID != "node-b" {
		t.Errorf("after reconnect: %d live, want the 2 replacements on b", len(live))
	}
}

// TestDisconnectWindowPassedLost: the window passes, the node is down and
// the server marked the unknown allocs lost: no new placements (their
// replacements hold the indexes), no stop of the replacements.
func TestDisconnectWindowPassedLost(t *testing.T) {
	st := newMemState()
	a, b := testNode("a", "dc1", 4000, 8192), testNode("b", "dc1", 4000, 8192)
	st.addNode(a)
	job := testJob("j", api.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].MaxClientDisconnect = time.Minute
	st.upsertJob(job)
	res, _ := Schedule(st, testEval(job, 1), Options{Now: testNow})
	st.apply(res.Plan)
	orig := st.liveAllocs("default", "j")[0]
	st.addNode(b)
	a.Status = api.NodeStatusDisconnected
	c := *orig
	c.ClientStatus = api.AllocClientStatusUnknown
	st.upsertAlloc(&c)
	res, _ = Schedule(st, testEval(job, 2), Options{Now: testNow})
	st.apply(res.Plan)
	a.Status = api.NodeStatusDown
	l := *st.allocs[orig.ID]
	l.ClientStatus = api.AllocClientStatusLost
	st.upsertAlloc(&l)
	res, err := Schedule(st, testEval(job, 3), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.NodeAllocation) != 0 || len(res.Plan.NodeUpdate["node-b"]) != 0 {
		t.Errorf("after the window: plan %+v %+v, want no placement and no stop on b", res.Plan.NodeAllocation, res.Plan.NodeUpdate)
	}
	if live := st.liveAllocs("default", "j"); len(live) != 1 || live[0].NodeID != "node-b" {
		t.Errorf("live = %v, want the replacement on b", live)
	}
}

// TestUnknownWithoutReplacementCapacity: an unknown alloc with nowhere to
// go keeps running on its disconnected node and is not stopped.
func TestUnknownWithoutReplacementCapacity(t *testing.T) {
	st := newMemState()
	a := testNode("a", "dc1", 4000, 8192)
	st.addNode(a)
	job := testJob("j", api.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].MaxClientDisconnect = time.Minute
	st.upsertJob(job)
	res, _ := Schedule(st, testEval(job, 1), Options{Now: testNow})
	st.apply(res.Plan)
	orig := st.liveAllocs("default", "j")[0]
	a.Status = api.NodeStatusDisconnected
	c := *orig
	c.ClientStatus = api.AllocClientStatusUnknown
	st.upsertAlloc(&c)
	res, err := Schedule(st, testEval(job, 2), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.NodeUpdate) != 0 || len(res.Plan.NodeAllocation) != 0 {
		t.Errorf("plan %+v %+v, want no stop and no placement", res.Plan.NodeUpdate, res.Plan.NodeAllocation)
	}
	if res.Eval.QueuedAllocations["web"] != 1 {
		t.Errorf("queued = %v, want the replacement queued", res.Eval.QueuedAllocations)
	}
}
