package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

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

// The read timeout bounds a snapshot restore's body by progress, not as a
// whole: a 4 MiB file sent at 1 MiB per 150 ms under a 300 ms read
// timeout is read to its end (and refused for its bad checksum, the
// proof that all of it was read); one that stops is cut off.
func TestSnapshotRestoreReadTimeoutIsProgress(t *testing.T) {
	addr := startListening(t, func(c *agenthttp.Config) {
		c.ReadTimeout = 300 * time.Millisecond
		c.SnapshotRestoreMaxBytes = 8 << 20
	})
	send := func(chunks int, stall bool) (int, *api.Error) {
		pr, pw := io.Pipe()
		go func() {
			tick := time.NewTicker(150 * time.Millisecond)
			defer tick.Stop()
			_, _ = io.WriteString(pw, `{"Format":"drover-snapshot","Version":1,"Index":5,"Size":4194304,"SHA256":"00","Created":"x"}`+"\n")
			for range chunks {
				<-tick.C
				if _, err := pw.Write(make([]byte, 1<<20)); err != nil {
					return
				}
			}
			if stall {
				return // never closes: the server must stop waiting
			}
			pw.Close()
		}()
		t.Cleanup(func() { pw.Close() })
		req, err := nethttp.NewRequest("PUT", "http://"+addr+"/v1/operator/snapshot", pr)
		if err != nil {
			t.Fatal(err)
		}
		r, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		defer r.Body.Close()
		var eb api.ErrorBody
		if err := json.NewDecoder(r.Body).Decode(&eb); err != nil || eb.Error == nil {
			t.Fatalf("restore = %d, body not a JSON error: %v", r.StatusCode, err)
		}
		return r.StatusCode, eb.Error
	}
	if st, e := send(4, false); st != 400 || !strings.Contains(e.Message, "checksum mismatch") {
		t.Errorf("slow but steady restore = %d %q, want 400 checksum mismatch (read whole)", st, e.Message)
	}
	start := time.Now()
	if st, e := send(1, true); st != 400 || !strings.Contains(e.Message, "http_read_timeout") {
		t.Errorf("stalled restore = %d %q, want 400 naming the read timeout", st, e.Message)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalled restore answered after %v, want soon after the 300ms timeout", took)
	}
}
