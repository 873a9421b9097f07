package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestCLIOperatorDefrag(t *testing.T) {
	addr := startAPI(t)
	code, out, stderr := runCLI(t, "operator", "defrag", "-dry-run", "-address", addr)
	if code != 0 || !strings.Contains(out, "No moves") {
		t.Errorf("defrag -dry-run: exit %d %q %q, want no moves", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "operator", "defrag", "-dry-run", "-json", "-address", addr)
	var p api.DefragPlan
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || !p.DryRun || len(p.Moves) != 0 {
		t.Errorf("defrag -dry-run -json: exit %d %q %q", code, out, stderr)
	}
	if code, out, stderr = runCLI(t, "operator", "defrag", "-address", addr); code != 0 || !strings.Contains(out, "No moves") {
		t.Errorf("defrag: exit %d %q %q", code, out, stderr)
	}
}

func TestPrintDefragPlan(t *testing.T) {
	var b bytes.Buffer
	printDefragPlan(&b, &api.DefragPlan{DryRun: true, Unblocks: []string{"train.web"}, FreedNodes: []string{"n1-id"},
		Moves: []*api.DefragMove{{AllocID: "0123456789ab", AllocName: "a.web[0]", From: "n1-id", FromName: "n1", To: "n2-id", ToName: "n2",
			Why: "frees n1 for train.web (8 GPU)"}}})
	out := b.String()
	for _, want := range []string{"01234567", "a.web[0]", "n1", "n2", "frees n1 for train.web (8 GPU)", "Unblocks: train.web", "Dry run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}
