package http_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/drover/drover/api"
)

// filter (go-bexpr) and per_page/next_token pagination on lists, as Nomad.
func TestListFilterAndPagination(t *testing.T) {
	a := newTestAPI(t)
	for i := range 5 {
		j := webJob(1)
		job := j["Job"].(map[string]any)
		job["ID"] = fmt.Sprintf("job-%d", i)
		if i%2 == 1 {
			job["Type"] = "batch"
		}
		a.register(j)
	}
	var batch []*api.JobListStub
	a.ok("GET", "/v1/jobs?filter="+url.QueryEscape(`Type == "batch"`), nil, &batch)
	if len(batch) != 2 || batch[0].ID != "job-1" || batch[1].ID != "job-3" {
		t.Fatalf("filter Type == batch: %d jobs %v", len(batch), ids(batch))
	}
	var seen []string
	token := ""
	for page := 0; ; page++ {
		var got []*api.JobListStub
		r := a.ok("GET", "/v1/jobs?per_page=2&next_token="+url.QueryEscape(token), nil, &got)
		for _, j := range got {
			seen = append(seen, j.ID)
		}
		token = r.header.Get("X-Nomad-NextToken")
		if token != r.header.Get("X-Drover-NextToken") {
			t.Fatalf("next tokens differ: %q vs %q", token, r.header.Get("X-Drover-NextToken"))
		}
		if token == "" {
			break
		}
		if len(got) != 2 || page > 3 {
			t.Fatalf("page %d: %d jobs, token %q", page, len(got), token)
		}
	}
	if fmt.Sprint(seen) != "[job-0 job-1 job-2 job-3 job-4]" {
		t.Errorf("pages gave %v", seen)
	}
	a.fails("GET", "/v1/jobs?filter="+url.QueryEscape(`Type ==`), nil, 400, "bad_request")
	a.fails("GET", "/v1/jobs?filter="+url.QueryEscape(`NoSuchField == "x"`), nil, 400, "bad_request")
	a.fails("GET", "/v1/jobs?per_page=0", nil, 400, "bad_request")
	var evals []*api.Evaluation
	a.ok("GET", "/v1/evaluations?filter="+url.QueryEscape(`JobID == "job-2"`), nil, &evals)
	if len(evals) == 0 {
		t.Errorf("eval filter JobID == job-2: no evals")
	}
	for _, e := range evals {
		if e.JobID != "job-2" {
			t.Errorf("eval filter JobID == job-2 kept an eval of %q", e.JobID)
		}
	}
}

func ids(js []*api.JobListStub) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}
