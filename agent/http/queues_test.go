package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// Queues over HTTP: one queue or a batch per PUT, names with slashes in
// the path, the implicit default, tree errors as 400s, unknown as 404, a
// job in a missing queue refused, pending jobs counted up the tree, and
// a blocking list woken by a write.
func TestQueuesHTTP(t *testing.T) {
	a := newTestAPI(t)
	var list []*api.QueueStatus
	a.ok("GET", "/v1/queues", nil, &list)
	if len(list) != 1 || list[0].Queue.Name != api.DefaultQueue {
		t.Fatalf("initial queues %+v, want the implicit default", list)
	}
	if e := a.fails("PUT", "/v1/queues", api.Queue{Name: "team-a/train"}, 400, api.ErrBadRequest.Code); !strings.Contains(e.Message, `parent queue "team-a" does not exist`) {
		t.Errorf("missing parent: %s", e.Message)
	}
	a.fails("PUT", "/v1/queues", `{"Name":"x","Bogus":1}`, 400, api.ErrBadRequest.Code)
	a.ok("PUT", "/v1/queues", map[string]any{"Queues": []*api.Queue{
		{Name: "team-a/train", Guaranteed: &api.QueueResources{GPUs: 4}},
		{Name: "team-a", Guaranteed: &api.QueueResources{GPUs: 8}, Limit: &api.QueueResources{GPUs: 16}},
	}}, nil)
	done := make(chan []*api.QueueStatus, 1)
	idx := headerIndex(t, a.ok("GET", "/v1/queues", nil, nil))
	go func() {
		var got []*api.QueueStatus
		a.ok("GET", "/v1/queues?prefix=team-b&wait=10s&index="+itoa(idx), nil, &got)
		done <- got
	}()
	a.ok("POST", "/v1/queues", api.Queue{Name: "team-b", Weight: 3, Description: "inference"}, nil)
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Queue.Name != "team-b" || got[0].Queue.Weight != 3 {
			t.Fatalf("blocking list answered %+v", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("blocking list not woken by an upsert")
	}
	var st api.QueueStatus
	a.ok("GET", "/v1/queue/team-a/train", nil, &st)
	if st.Queue.Parent != "team-a" || st.Queue.Guaranteed.GPUs != 4 {
		t.Fatalf("team-a/train %+v", st.Queue)
	}
	a.fails("GET", "/v1/queue/nope", nil, 404, api.ErrNotFound.Code)
	a.fails("DELETE", "/v1/queue/default", nil, 400, api.ErrBadRequest.Code)
	a.fails("DELETE", "/v1/queue/team-a", nil, 400, api.ErrBadRequest.Code)

	job := webJob(1)
	job["Job"].(map[string]any)["Queue"] = "team-z"
	a.fails("PUT", "/v1/jobs", job, 400, api.ErrInvalidJob.Code)
	job["Job"].(map[string]any)["Queue"] = "team-a/train"
	a.register(job) // no nodes: it stays pending
	testcluster.WaitState(t, a.srv, 10*time.Second, "team-a with 1 pending job (its child's)", func() bool {
		a.ok("GET", "/v1/queue/team-a", nil, &st)
		return st.PendingJobs == 1
	})
	a.fails("DELETE", "/v1/queue/team-a/train", nil, 400, api.ErrBadRequest.Code)
	a.ok("DELETE", "/v1/queue/team-b", nil, nil)
	a.fails("DELETE", "/v1/queue/team-b", nil, 404, api.ErrNotFound.Code)
}
