package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// `drover node interrupt -deadline 2m NODE` posts the notice for the
// resolved node; a deadline out of bounds or no node is a usage error.
func TestNodeInterrupt(t *testing.T) {
	var mu sync.Mutex
	var got api.NodeInterruptRequest
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(&api.Node{ID: "node-1"})
			return
		}
		mu.Lock()
		path = r.URL.Path
		_ = json.NewDecoder(r.Body).Decode(&got)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(&api.NodeUpdateResponse{Index: 5})
	}))
	defer srv.Close()
	code, out, stderr := runCLI(t, "node", "interrupt", "-address", srv.URL, "-deadline", "2m", "node-1")
	if code != 0 || !strings.Contains(out, `Node "node-1" interrupted`) {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if path != "/v1/node/node-1/interrupt" || got.NodeID != "node-1" || got.Deadline != 2*time.Minute {
		t.Errorf("request %s %+v, want the node's interrupt with a 2m deadline", path, got)
	}
	for _, args := range [][]string{{"node", "interrupt"}, {"node", "interrupt", "-deadline", "0s", "n1"}, {"node", "interrupt", "-deadline", "48h", "n1"}} {
		if code, _, _ := runCLI(t, args...); code != ExitUsage {
			t.Errorf("drover %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
}
