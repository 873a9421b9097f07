package cli

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestCLIOperator(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	file := writeFile(t, dir, "web.hcl", webHCL)
	if code, _, stderr := cli("job", "run", "-detach", file); code != 0 {
		t.Fatalf("job run: exit %d %s", code, stderr)
	}

	code, out, _ := cli("operator", "raft", "list-peers", "-json")
	var conf api.RaftConfiguration
	if code != 0 || json.Unmarshal([]byte(out), &conf) != nil || len(conf.Servers) != 1 || !conf.Servers[0].Leader || !conf.Servers[0].Voter {
		t.Errorf("list-peers -json: exit %d %q, want one voter leader", code, out)
	}
	if code, out, _ := cli("operator", "raft", "list-peers"); code != 0 || !strings.Contains(out, "leader") {
		t.Errorf("list-peers: exit %d %q", code, out)
	}
	if code, _, _ := cli("operator", "raft", "remove-peer"); code != ExitUsage {
		t.Errorf("remove-peer without a peer: exit %d, want 2", code)
	}
	if code, _, stderr := cli("operator", "raft", "remove-peer", "-peer-address", "127.0.0.1:1"); code != ExitError || !strings.Contains(stderr, "no such raft peer") {
		t.Errorf("remove-peer unknown: exit %d %q, want 1", code, stderr)
	}

	snap := filepath.Join(dir, "state.snap")
	if code, out, stderr := cli("operator", "snapshot", "save", snap); code != 0 || !strings.Contains(out, "written") {
		t.Fatalf("snapshot save: exit %d %q %q", code, out, stderr)
	}
	if code, _, _ := cli("job", "stop", "-purge", "web"); code != 0 {
		t.Fatal("job stop -purge")
	}
	if code, _, _ := cli("job", "status", "web"); code != ExitError {
		t.Fatal("job still there after purge")
	}
	bad := writeFile(t, dir, "bad.snap", "not a snapshot\n")
	if code, _, stderr := cli("operator", "snapshot", "restore", bad); code != ExitError || !strings.Contains(stderr, "bad snapshot file") {
		t.Errorf("restore garbage: exit %d %q, want 1 and bad snapshot file", code, stderr)
	}
	if code, out, stderr := cli("operator", "snapshot", "restore", snap); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("snapshot restore: exit %d %q %q", code, out, stderr)
	}
	if code, out, _ := cli("job", "status", "web"); code != 0 || !strings.Contains(out, "web") {
		t.Errorf("job status after restore: exit %d %q, want the job back", code, out)
	}
	// A save to a directory that does not exist fails and leaves nothing.
	if code, _, _ := cli("operator", "snapshot", "save", filepath.Join(dir, "no", "such", "x.snap")); code != ExitError {
		t.Errorf("save into a missing directory: exit %d, want 1", code)
	}

	code, out, _ = cli("operator", "gossip", "keyring", "generate")
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out)); code != 0 || err != nil || len(k) != 32 {
		t.Errorf("keyring generate: exit %d %q, want a base64 32-byte key", code, out)
	}
	// The dev agent does not gossip: keyring operations say so.
	if code, _, stderr := cli("operator", "gossip", "keyring", "list"); code != ExitError || !strings.Contains(stderr, "gossip") {
		t.Errorf("keyring list on a dev agent: exit %d %q, want 1", code, stderr)
	}
	if _, err := os.Stat(snap); err != nil {
		t.Error(err)
	}
}
