package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// `node meta apply` changes what the servers (and so the scheduler) see of
// the node; `node meta read` shows it; bad input exits 2 or 1.
func TestCLINodeMeta(t *testing.T) {
	addr, srv := startAgentServer(t, true)
	c := api.NewClient(addr)
	ctx := context.Background()
	var nodeID string
	testcluster.WaitState(t, srv, 15*time.Second, "a node registered", func() bool {
		if nodes, _, err := c.Nodes(ctx, nil); err == nil && len(nodes) == 1 {
			nodeID = nodes[0].ID
		}
		return nodeID != ""
	})
	if code, _, stderr := runCLI(t, "node", "meta", "apply", "-address", addr, "team=vision", "tier=gold"); code != 0 {
		t.Fatalf("apply: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "node", "meta", "apply", "-address", addr, "-node-id", nodeID[:8], "-unset", "tier"); code != 0 {
		t.Fatalf("apply -unset with an ID prefix: exit %d stderr %q", code, stderr)
	}
	testcluster.WaitState(t, srv, 15*time.Second, "the server's node meta team=vision without tier", func() bool {
		n, _, err := c.Node(ctx, nodeID, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, tier := n.Meta["tier"]
		return n.Meta["team"] == "vision" && !tier
	})
	code, out, _ := runCLI(t, "node", "meta", "read", "-address", addr, "-json")
	var resp api.NodeMetaResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || resp.Meta["team"] != "vision" || resp.Dynamic["team"] == nil {
		t.Fatalf("read -json: exit %d out %q", code, out)
	}
	if code, out, _ := runCLI(t, "node", "meta", "read", "-address", addr); code != 0 || !strings.Contains(out, "team") || !strings.Contains(out, "vision") {
		t.Errorf("read: exit %d out %q", code, out)
	}
	if code, _, _ := runCLI(t, "node", "meta", "apply", "-address", addr, "novalue"); code != 2 {
		t.Errorf("apply novalue: exit %d, want 2", code)
	}
	if code, _, stderr := runCLI(t, "node", "meta", "read", "-address", addr, "-node-id", "ffffffff"); code != 1 || !strings.Contains(stderr, "ffffffff") {
		t.Errorf("read unknown node: exit %d stderr %q", code, stderr)
	}
}
