package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// A system job comes back on a node after `node drain -enable` (which
// stops it there) and `node drain -disable`, through the real CLI.
func TestE2ESystemJobAfterDrainDisable(t *testing.T) {
	d := startDevCluster(t)
	file := filepath.Join(t.TempDir(), "sys.hcl")
	if err := os.WriteFile(file, []byte(sleepJobHCL("sysagent", "system", 50, 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	first := d.runJob(file, "sysagent")
	reapTasks(t, first)
	var nodes []*api.NodeListStub
	if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
		t.Fatalf("nodes: status %d, %d nodes", code, len(nodes))
	}
	nodeID := nodes[0].ID
	// Without -detach the CLI monitors the drain until it is complete.
	out, err := d.drover("node", "drain", "-enable", "-yes", "-deadline", "1m", nodeID[:8])
	if err != nil {
		t.Fatalf("drover node drain -enable: %v\n%s", err, out)
	}
	for _, want := range []string{"Monitoring node", `draining`, "status running -> complete", "Drain complete for node"} {
		if !strings.Contains(out, want) {
			t.Errorf("drain output lacks %q:\n%s", want, out)
		}
	}
	d.alloc(first, "the system alloc stopped by the drain", func(a *api.Allocation) (bool, string) {
		return a.ClientTerminalStatus(), a.DesiredStatus + "/" + a.ClientStatus
	})
	d.waitBlocking("/v1/node/"+nodeID, "the drain complete", func(b []byte) (bool, string) {
		var n api.Node
		if err := json.Unmarshal(b, &n); err != nil {
			return false, err.Error()
		}
		return n.DrainStrategy == nil && n.LastDrain != nil && n.LastDrain.Status == "complete", fmt.Sprintf("drain %+v last %+v", n.DrainStrategy, n.LastDrain)
	})
	if out, err := d.drover("node", "drain", "-disable", nodeID[:8]); err != nil {
		t.Fatalf("drover node drain -disable: %v\n%s", err, out)
	}
	var again string
	d.waitBlocking("/v1/job/sysagent/allocations", "a new running system alloc", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range stubs {
			got = append(got, s.ID[:8]+":"+s.ClientStatus)
			if s.ID != first && s.NodeID == nodeID && s.ClientStatus == api.AllocClientStatusRunning {
				again = s.ID
			}
		}
		return again != "", fmt.Sprint(got)
	})
	reapTasks(t, again)
	var job api.JobListStub
	if code := devGet(d.base+"/v1/job/sysagent", &job); code != 200 || job.Status != api.JobStatusRunning {
		t.Errorf("job after drain disable: status %d %q", code, job.Status)
	}
}
