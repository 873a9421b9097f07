package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// queue apply shows the server's warning about a gpu_models key no node's
// GPU matches (the dev agent has none) and refuses a key naming a MIG
// profile, which queues never count.
func TestCLIQueueModelKeys(t *testing.T) {
	addr, _ := startAgentServer(t, false)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := write("typo.hcl", "queue \"t\" {\n  limit {\n    gpu_models = { \"H1000\" = 2 }\n  }\n}\n")
	code, out, stderr := runCLI(t, "queue", "apply", "-address", addr, typo)
	if code != 0 || !strings.Contains(out, "Queue Warnings:") || !strings.Contains(out, `gpu_models "H1000": no node has a GPU model matching it`) {
		t.Errorf("apply an unknown model: exit %d out %q stderr %q, want it applied with a warning", code, out, stderr)
	}
	plain := write("plain.hcl", "queue \"p\" {\n  limit {\n    gpu = 2\n  }\n}\n")
	if code, out, _ := runCLI(t, "queue", "apply", "-address", addr, plain); code != 0 || strings.Contains(out, "Warnings") {
		t.Errorf("apply without models: exit %d out %q, want no warning", code, out)
	}
	mig := write("mig.hcl", "queue \"m\" {\n  limit {\n    gpu_models = { \"1g.10gb\" = 2 }\n  }\n}\n")
	if code, _, stderr := runCLI(t, "queue", "apply", "-address", addr, mig); code != 1 || !strings.Contains(stderr, "names MIG instances") {
		t.Errorf("apply a MIG profile key: exit %d stderr %q, want it refused", code, stderr)
	}
}

// queue status shows, on a limit's model row, what the queue holds of
// every model the key names.
func TestQueueStatusModelRow(t *testing.T) {
	st := &api.QueueStatus{Queue: &api.Queue{Name: "q", Limit: &api.QueueResources{GPUsByModel: map[string]float64{"H100": 8}}},
		Allocated: api.QueueResources{GPUs: 5, GPUsByModel: map[string]float64{"nvidia/gpu/NVIDIA H100 80GB HBM3": 4, "nvidia/gpu/NVIDIA H100 PCIe": 0.5}}}
	var b strings.Builder
	printQueueResources(&b, st)
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "gpu H100 ") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	if row != "gpu H100 4.5 - 8 -" {
		t.Errorf("H100 row %q, want %q in:\n%s", row, "gpu H100 4.5 - 8 -", b.String())
	}
}
