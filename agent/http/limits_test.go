package http_test

import (
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

const parseLimitJob = "variable \"v\" {\n  type = list(any)\n  default = []\n}\njob \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n      config {\n        args = %s\n      }\n    }\n  }\n}\n"

// POST /v1/jobs/parse with hostile HCL: before the limits a list nested
// 100,000 deep (195 KB) overflowed the agent's stack (fatal error, agent
// gone) and 50,000 deep took it to 1 GB. Now each is a 400 with the
// position, and the agent answers the next request.
func TestJobParseLimits(t *testing.T) {
	a := newTestAPI(t)
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for _, tc := range []struct {
		name string
		req  *api.JobsParseRequest
		want string
	}{
		{"deep job", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, deep)}, "job.hcl:10:76: Nesting too deep"},
		{"half as deep", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, deep[:50_000]+deep[150_000:])}, "job.hcl:10:76: Nesting too deep"},
		{"deep template", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, strings.Repeat(`"${`, 50_000)+strings.Repeat(`}"`, 50_000))}, "job.hcl:10:"},
		{"operator chain", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, strings.Repeat("!", 100_000)+"true")}, "job.hcl:10:"},
		{"deep variables", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, "var.v"), Variables: "v = " + deep}, "variables.hcl:1:69: Nesting too deep"},
		{"deep -var", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, "var.v"), VariableArgs: map[string]string{"v": deep}}, `Invalid value for variable "v" from -var v: Nesting too deep`},
		{"large job", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, `"`+strings.Repeat("x", 2<<20)+`"`)}, "job.hcl:1:1: Job source too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.t = t
			e := a.fails("POST", "/v1/jobs/parse", tc.req, nethttp.StatusBadRequest, "invalid_job")
			if !strings.Contains(e.Message, tc.want) {
				t.Errorf("error %q, want it to contain %q", e.Message, tc.want)
			}
		})
	}
	a.t = t
	var job api.Job
	a.ok("POST", "/v1/jobs/parse", &api.JobsParseRequest{JobHCL: fmt.Sprintf(parseLimitJob, "[[1]]")}, &job)
	if job.ID != "x" {
		t.Fatalf("parse after the hostile requests = %+v, want job x", job)
	}
}

// JSON bodies: encoding/json refuses nesting over 10,000 levels and the
// middleware bodies over MaxBodyBytes; both are clear client errors.
func TestJSONBodyLimits(t *testing.T) {
	a := newTestAPI(t, func(c *agenthttp.Config) { c.MaxBodyBytes = 1 << 20 })
	nested := func(n int) string {
		return `{"Job":{"ID":"deep","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"exec","Config":{"args":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}}]}]}}`
	}
	e := a.fails("PUT", "/v1/jobs", nested(10_001), nethttp.StatusBadRequest, "bad_request")
	if !strings.Contains(e.Message, "exceeded max depth") {
		t.Errorf("deep JSON: %q, want the depth named", e.Message)
	}
	a.fails("POST", "/v1/jobs/parse", `{"JobHCL":"x","VariableArgs":`+strings.Repeat("[", 10_001)+`}`, nethttp.StatusBadRequest, "bad_request")
	e = a.fails("PUT", "/v1/jobs", `{"Job":{"ID":"`+strings.Repeat("x", 1<<20)+`"}}`, nethttp.StatusRequestEntityTooLarge, "body_too_large")
	if !strings.Contains(e.Message, "1048576") {
		t.Errorf("large body: %q, want the limit named", e.Message)
	}
	a.fails("POST", "/v1/jobs/parse", &api.JobsParseRequest{JobHCL: strings.Repeat("x", 1<<20)}, nethttp.StatusRequestEntityTooLarge, "body_too_large")
	// Just under the decoder's limit is a job like any other: stored,
	// read back whole, and the server goes on answering.
	a.register(nested(9_900))
	var job api.Job
	a.ok("GET", "/v1/job/deep", nil, &job)
	v, depth := job.TaskGroups[0].Tasks[0].Config["args"], 0
	for l, ok := v.([]any); ok; l, ok = v.([]any) {
		depth++
		if len(l) == 0 {
			break
		}
		v = l[0]
	}
	if depth != 9_900 {
		t.Errorf("stored config nests %d deep, want 9900", depth)
	}
	a.register(webJob(1))
}
