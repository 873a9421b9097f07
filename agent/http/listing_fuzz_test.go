package http

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// FuzzListFilter feeds filter expressions to listPage: it answers a list
// or a 400, never panics, and keeps only items the filter accepts.
func FuzzListFilter(f *testing.F) {
	for _, seed := range []string{`Type == "batch"`, `Status != "dead" and Priority > 40`, `ID matches "^a"`,
		`Type ==`, `((((((((`, strings.Repeat("(", 5000), `Meta.team == "x"`, `"a" in Datacenters`} {
		f.Add(seed)
	}
	items := []*api.JobListStub{{ID: "a", Type: "batch", Priority: 50, Status: "running"}, {ID: "b", Type: "service", Priority: 10}}
	f.Fuzz(func(t *testing.T, filter string) {
		r := httptest.NewRequest("GET", "/v1/jobs?filter="+url.QueryEscape(filter), nil)
		out, err := listPage(httptest.NewRecorder(), r, items, func(j *api.JobListStub) string { return j.ID })
		if err != nil {
			if e := api.AsError(err); e.Status != 400 {
				t.Fatalf("filter %q: status %d, want 400: %v", filter, e.Status, err)
			}
			return
		}
		if len(out) > len(items) {
			t.Fatalf("filter %q kept %d of %d", filter, len(out), len(items))
		}
	})
}
