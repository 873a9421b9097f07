package http_test

import (
	"bytes"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

// PUT /v1/operator/snapshot had no limit of its own (the general body
// limit does not apply to it): a restore over
// limits.snapshot_restore_max_bytes is now a 413, whether the header
// declares the size or the body just goes on, and the state is untouched;
// a snapshot under the limit still restores.
func TestSnapshotRestoreLimit(t *testing.T) {
	const limit = 64 << 10
	a := newTestAPI(t, func(c *agenthttp.Config) { c.SnapshotRestoreMaxBytes = limit })
	a.register(webJob(1))
	snap := a.ok("GET", "/v1/operator/snapshot", nil, nil).body
	if len(snap) == 0 || len(snap) >= limit {
		t.Fatalf("snapshot is %d bytes, want 1..%d for this test", len(snap), limit)
	}
	hdr := func(size int64) string {
		return fmt.Sprintf(`{"Format":"drover-snapshot","Version":1,"Index":5,"Size":%d,"SHA256":"00","Created":"x"}`+"\n", size)
	}
	for name, body := range map[string]string{
		"junk":              strings.Repeat("x", limit+1),
		"declared too big":  hdr(10 << 30),
		"declared under":    hdr(limit-100) + strings.Repeat("y", limit),
		"junk, no new line": strings.Repeat("z", 200<<10),
	} {
		t.Run(name, func(t *testing.T) {
			a.t = t
			e := a.fails("PUT", "/v1/operator/snapshot", body, nethttp.StatusRequestEntityTooLarge, "body_too_large")
			if !strings.Contains(e.Message, "65536") {
				t.Errorf("message %q, want the limit named", e.Message)
			}
			var job api.Job
			a.ok("GET", "/v1/job/web", nil, &job)
		})
	}
	a.t = t
	// A bad file under the limit is still a 400, not a 413.
	a.fails("PUT", "/v1/operator/snapshot", hdr(10)+"0123456789", nethttp.StatusBadRequest, "bad_request")
	other := webJob(1)
	other["Job"].(map[string]any)["ID"] = "other"
	a.register(other)
	var out api.SnapshotRestoreResponse
	a.ok("PUT", "/v1/operator/snapshot", bytes.Clone(snap), &out)
	if out.Index == 0 {
		t.Errorf("restore answered %+v, want an index", out)
	}
	a.ok("GET", "/v1/job/web", nil, nil)
	a.fails("GET", "/v1/job/other", nil, nethttp.StatusNotFound, "job_not_found")
}
