package http_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestJobVerbRoutes(t *testing.T) {
	a := newTestAPI(t)
	tmpl := webJob(1)
	job := tmpl["Job"].(map[string]any)
	job["ID"] = "report"
	job["Type"] = "batch"
	job["ParameterizedJob"] = map[string]any{"Payload": "optional", "MetaRequired": []string{"customer"}}
	var reg api.JobRegisterResponse
	a.ok("PUT", "/v1/jobs", tmpl, &reg)

	a.fails("POST", "/v1/job/report/dispatch", map[string]any{}, 400, "bad_request")
	a.fails("POST", "/v1/job/report/dispatch", map[string]any{"Meta": map[string]string{"customer": "x"}, "Bogus": 1}, 400, "bad_request")
	a.fails("POST", "/v1/job/nope/dispatch", map[string]any{}, 404, "job_not_found")
	var d api.JobDispatchResponse
	r := a.ok("POST", "/v1/job/report/dispatch", map[string]any{"Meta": map[string]string{"customer": "x"}, "Payload": []byte("hi")}, &d)
	if d.DispatchedJobID == "" || d.EvalID == "" || headerIndex(t, r) != d.Index {
		t.Fatalf("dispatch answered %+v (index header %s)", d, r.header.Get(api.HeaderIndex))
	}
	var child api.Job
	a.ok("GET", "/v1/job/"+url.PathEscape(d.DispatchedJobID), nil, &child)
	if child.ParentID != "report" || string(child.Payload) != "hi" {
		t.Errorf("dispatched child %+v", child)
	}

	a.register(webJob(1))
	v1 := webJob(2)
	a.register(v1)
	a.fails("POST", "/v1/job/web/revert", map[string]any{"JobVersion": 7}, 400, "bad_request")
	var rev api.JobRegisterResponse
	a.ok("POST", "/v1/job/web/revert", map[string]any{"JobVersion": 0}, &rev)
	if rev.EvalID == "" {
		t.Errorf("revert answered %+v", rev)
	}
	var sc api.JobRegisterResponse
	a.ok("POST", "/v1/job/web/scale", map[string]any{"Target": map[string]string{"Group": "web"}, "Count": 3}, &sc)
	a.waitEval(sc.EvalID)
	var st api.JobScaleStatus
	a.ok("GET", "/v1/job/web/scale", nil, &st)
	if st.TaskGroups["web"].Desired != 3 || st.JobID != "web" {
		t.Errorf("scale status %+v, want web desired 3", st)
	}
	a.fails("POST", "/v1/job/web/scale", map[string]any{"Target": map[string]string{"Group": "nope"}, "Count": 3}, 400, "bad_request")
	a.fails("POST", "/v1/job/web/periodic/force", map[string]any{}, 400, "bad_request")
	a.ok("PUT", "/v1/system/gc", nil, nil)
}

// Query meta goes out under Nomad's header names too, on reads and writes.
func TestNomadHeaders(t *testing.T) {
	a := newTestAPI(t)
	reg := a.register(webJob(1))
	w := a.do("PUT", "/v1/jobs", webJob(2))
	if w.header.Get("X-Nomad-Index") == "" || w.header.Get("X-Nomad-Index") != w.header.Get(api.HeaderIndex) {
		t.Errorf("write: X-Nomad-Index %q, %s %q", w.header.Get("X-Nomad-Index"), api.HeaderIndex, w.header.Get(api.HeaderIndex))
	}
	r := a.ok("GET", "/v1/job/web", nil, nil)
	for _, p := range [][2]string{{api.HeaderIndex, "X-Nomad-Index"}, {api.HeaderKnownLeader, "X-Nomad-KnownLeader"}, {api.HeaderLastContact, "X-Nomad-LastContact"}} {
		if got, want := r.header.Get(p[1]), r.header.Get(p[0]); got == "" || got != want {
			t.Errorf("read: %s = %q, want %q like %s", p[1], got, want, p[0])
		}
	}
	if headerIndex(t, r) < reg.JobModifyIndex {
		t.Errorf("index %d older than the register's %d", headerIndex(t, r), reg.JobModifyIndex)
	}
}

func TestMetricsJSON(t *testing.T) {
	a := newTestAPI(t)
	a.ok("GET", "/v1/jobs", nil, nil)
	var m struct {
		Timestamp string
		Gauges    []struct{ Name string }
		Counters  []struct {
			Name   string
			Count  uint64
			Labels map[string]string
		}
		Samples []struct {
			Name  string
			Count uint64
		}
	}
	a.ok("GET", "/v1/metrics?format=json", nil, &m)
	if m.Timestamp == "" || len(m.Counters) == 0 || len(m.Samples) == 0 {
		t.Fatalf("metrics JSON %+v, want a timestamp, counters and samples", m)
	}
	found := false
	for _, c := range m.Counters {
		found = found || (c.Count > 0 && c.Labels["route"] == "GET /v1/jobs")
	}
	if !found {
		t.Errorf("no request counter for GET /v1/jobs in %+v", m.Counters)
	}
	if r := a.do("GET", "/v1/metrics", nil); r.status != 200 || !strings.Contains(string(r.body), "# TYPE") {
		t.Errorf("default metrics: %d, want Prometheus text", r.status)
	}
	a.fails("GET", "/v1/metrics?format=xml", nil, 400, "bad_request")
}
