package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// The autoscaler on real client agents (the local provider): a job in
// the empty node pool "gpu" grows it by one agent; `drover node
// interrupt` drains that node with the spot reason, which the stopped
// alloc carries and the task reads from its stop_reason file when told
// to stop, while the work moves to a new agent and the interrupted one
// goes; once the job stops, the empty node goes after its idle time.
func TestE2EAutoscaleLocal(t *testing.T) {
	dataDir := t.TempDir()
	out := t.TempDir()
	conf := filepath.Join(t.TempDir(), "agent.hcl")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`server {
  autoscale {
    interval = "1s"
    provider "here" {
      type = "local"
      dir  = %q
    }
    pool "gpu" {
      min      = 0
      max      = 2
      provider = "here"
      cooldown = "1s"
      node_shape {
        cpu    = 1000
        memory = 1024
        spot   = true
      }
      scale_in {
        strategy = "empty"
        idle     = "3s"
      }
    }
  }
}
`, filepath.Join(dataDir, "local"))), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDevCluster(t, "-config", conf)
	createPool(t, d, "gpu")
	job := filepath.Join(t.TempDir(), "svc.hcl")
	if err := os.WriteFile(job, []byte(fmt.Sprintf(`job "svc" {
  node_pool = "gpu"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'cat \"$DROVER_ALLOC_DIR/stop_reason\" > %s/$DROVER_ALLOC_ID; exit 0' TERM; while :; do sleep 1; done"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Pending (exit 2 without -detach) until the autoscaler's agent joins.
	if o, err := d.drover("job", "run", "-detach", job); err != nil {
		t.Fatalf("drover job run: %v\n%s", err, o)
	}
	var first string
	d.waitBlocking("/v1/job/svc/allocations", "the job running on a new node", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				first = s.ID
			}
		}
		return first != "", fmt.Sprint(len(stubs), " allocs")
	})
	a := d.alloc(first, "the first alloc", func(a *api.Allocation) (bool, string) { return true, "" })
	var node api.Node
	if code := devGet(d.base+"/v1/node/"+a.NodeID, &node); code != 200 || node.NodePool != "gpu" || node.Meta["drover.instance"] != node.Name ||
		node.Meta[api.NodeMetaSpot] != "true" {
		t.Fatalf("node of the first alloc: status %d, %+v", code, node)
	}

	if o, err := d.drover("node", "interrupt", "-deadline", "1m", a.NodeID); err != nil || !strings.Contains(o, "interrupted") {
		t.Fatalf("drover node interrupt: %v\n%s", err, o)
	}
	stopped := d.alloc(first, "the interrupted alloc stopped with the reason", func(a *api.Allocation) (bool, string) {
		return a.DesiredStatus == api.AllocDesiredStatusStop && a.ClientTerminalStatus(), a.DesiredStatus + "/" + a.ClientStatus + " " + a.DesiredDescription
	})
	if !strings.Contains(stopped.DesiredDescription, "spot interruption") {
		t.Errorf("interrupted alloc's description %q, want the spot interruption", stopped.DesiredDescription)
	}
	var second string
	d.waitBlocking("/v1/job/svc/allocations", "the work running on another node", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range stubs {
			got = append(got, s.ID[:8]+":"+s.ClientStatus+"@"+s.NodeID[:8])
			if s.ClientStatus == api.AllocClientStatusRunning && s.NodeID != a.NodeID {
				second = s.ID
			}
		}
		return second != "", fmt.Sprint(got)
	})
	reason, err := os.ReadFile(filepath.Join(out, first))
	if err != nil || strings.TrimSpace(string(reason)) != "spot_interrupted" {
		t.Errorf("the task's stop_reason: %q, %v; want spot_interrupted", reason, err)
	}
	waitFor(t, devDeadline, "the interrupted node removed", func() (bool, string) {
		code := devGet(d.base+"/v1/node/"+a.NodeID, nil)
		return code == 404, fmt.Sprint("status ", code)
	})

	if o, err := d.drover("job", "stop", "-detach", "svc"); err != nil {
		t.Fatalf("drover job stop: %v\n%s", err, o)
	}
	waitPoolEmpty(t, d, "gpu", "the empty node removed after idle")
}

// The sim provider in a running cluster: pending work in the empty pool
// "gpu" gets a simulated node (after its boot delay) whose alloc reads
// running; the node goes once the job stops and its idle time passed.
func TestE2EAutoscaleSim(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "agent.hcl")
	if err := os.WriteFile(conf, []byte(`server {
  autoscale {
    interval = "1s"
    provider "bench" {
      type       = "sim"
      boot_delay = "1s"
    }
    pool "gpu" {
      max      = 3
      provider = "bench"
      cooldown = "1s"
      node_shape {
        gpus   = 8
        cpu    = 64000
        memory = 262144
        price  = 20
      }
      scale_in {
        idle = "2s"
      }
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDevCluster(t, "-config", conf)
	createPool(t, d, "gpu")
	job := filepath.Join(t.TempDir(), "train.hcl")
	if err := os.WriteFile(job, []byte(`job "train" {
  node_pool = "gpu"
  group "g" {
    count = 2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 1000
        memory = 1024
        device "nvidia/gpu" {
          count = 8
        }
      }
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := d.drover("job", "run", "-detach", job); err != nil {
		t.Fatalf("drover job run: %v\n%s", err, o)
	}
	d.waitBlocking("/v1/job/train/allocations", "both allocs running on simulated nodes", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		running := map[string]bool{}
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				running[s.NodeID] = true
			}
		}
		return len(running) == 2, fmt.Sprint(len(stubs), " allocs on ", len(running), " nodes")
	})
	if o, err := d.drover("job", "stop", "-detach", "train"); err != nil {
		t.Fatalf("drover job stop: %v\n%s", err, o)
	}
	waitPoolEmpty(t, d, "gpu", "the simulated nodes removed after idle")
}

// createPool creates a node pool through the API.
func createPool(t *testing.T, d *devCluster, name string) {
	t.Helper()
	body, _ := json.Marshal(api.NodePool{Name: name})
	req, _ := http.NewRequest("PUT", d.base+"/v1/node/pools", bytes.NewReader(body))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create node pool %s: %v", name, err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("create node pool %s: status %d", name, r.StatusCode)
	}
}

// waitPoolEmpty waits until no node of pool is left (the autoscaler
// removed them).
func waitPoolEmpty(t *testing.T, d *devCluster, pool, what string) {
	t.Helper()
	waitFor(t, devDeadline, what, func() (bool, string) {
		var nodes []*api.NodeListStub
		if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 {
			return false, fmt.Sprint("status ", code)
		}
		var left []string
		for _, n := range nodes {
			if n.NodePool == pool {
				left = append(left, n.Name+":"+n.Status)
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
}
