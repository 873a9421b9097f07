package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// TestBlockingJobListWakesOnSummary: a blocking GET /v1/jobs returns when
// only a job's allocation counts change (the job row itself is untouched),
// since the list carries each job's summary.
func TestBlockingJobListWakesOnSummary(t *testing.T) {
	a := newTestAPI(t)
	n := testNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	reg := a.register(webJob(1))
	a.waitEval(reg.EvalID)
	var allocs []*api.AllocListStub
	a.ok("GET", "/v1/job/web/allocations", nil, &allocs)
	if len(allocs) != 1 {
		t.Fatalf("job allocations = %d, want 1", len(allocs))
	}
	var before []*api.JobListStub
	r := a.ok("GET", "/v1/jobs", nil, &before)
	idx := headerIndex(t, r)
	if len(before) != 1 || before[0].JobSummary == nil || before[0].JobSummary.Summary["web"].Starting != 1 {
		t.Fatalf("job list before = %s, want web with 1 starting", r.body)
	}

	done := make(chan *resp, 1)
	go func() {
		res, err := a.ts.Client().Get(fmt.Sprintf("%s/v1/jobs?index=%d&wait=60s", a.ts.URL, idx))
		if err != nil {
			done <- &resp{status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		done <- &resp{status: res.StatusCode, header: res.Header, body: []byte(b.String())}
	}()

	upd := &api.Allocation{ID: allocs[0].ID, ClientStatus: api.AllocClientStatusRunning,
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

	var got *resp
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("blocking job list did not return within 30s of the summary change")
	}
	var after []*api.JobListStub
	if err := json.Unmarshal(got.body, &after); err != nil || len(after) != 1 || after[0].JobSummary == nil {
		t.Fatalf("blocking job list = %d %s: %v", got.status, got.body, err)
	}
	if s := after[0].JobSummary.Summary["web"]; s.Running != 1 || s.Starting != 0 {
		t.Errorf("summary after the client update = %+v, want 1 running, 0 starting", s)
	}
	if gi := headerIndex(t, got); gi <= idx {
		t.Errorf("blocking job list index %d, want > %d", gi, idx)
	}
}

var _ agenthttp.JobDiffer = (*server.Jobs)(nil)

// TestJobVersionsDiffs: ?diffs=true answers, newest first, what each
// version changed against the one before.
func TestJobVersionsDiffs(t *testing.T) {
	a := newTestAPI(t)
	a.register(webJob(1))
	a.register(webJob(3))
	var plain api.JobVersionsResponse
	a.ok("GET", "/v1/job/web/versions", nil, &plain)
	if len(plain.Versions) != 2 || len(plain.Diffs) != 0 {
		t.Fatalf("versions without diffs = %d versions %d diffs, want 2 and 0", len(plain.Versions), len(plain.Diffs))
	}
	var vr api.JobVersionsResponse
	a.ok("GET", "/v1/job/web/versions?diffs=true", nil, &vr)
	if len(vr.Versions) != 2 || vr.Versions[0].Version != 1 || vr.Versions[1].Version != 0 {
		t.Fatalf("versions = %d, want versions 1 and 0 newest first", len(vr.Versions))
	}
	if len(vr.Diffs) != 1 || vr.Diffs[0] == nil {
		t.Fatalf("diffs = %+v, want one (version 1 against 0)", vr.Diffs)
	}
	d := vr.Diffs[0]
	if d.Type != api.DiffTypeEdited || len(d.TaskGroups) != 1 || d.TaskGroups[0].Name != "web" {
		t.Fatalf("diff = %s, want group web edited", mustJSON(t, d))
	}
	var count *api.FieldDiff
	for _, f := range d.TaskGroups[0].Fields {
		if f.Name == "Count" {
			count = f
		}
	}
	if count == nil || count.Old != "1" || count.New != "3" || count.Type != api.DiffTypeEdited {
		t.Errorf("group fields = %s, want Count 1 => 3", mustJSON(t, d.TaskGroups[0].Fields))
	}
	a.fails("GET", "/v1/job/web/versions?diffs=maybe", nil, 400, "bad_request")
}
