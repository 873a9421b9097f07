package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// var put (creates; replaces only with -check-index or -force) | get
// (-item) | list | purge, as Nomad's verbs, in a namespace too.
func TestCLIVariables(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	pem := writeFile(t, dir, "cert.pem", "-----BEGIN-----\nabc\n")
	if code, out, stderr := cli("var", "put", "team/db", "user=app", "pass=s3cret", "cert=@"+pem); code != 0 || !strings.Contains(out, `Successfully created variable "team/db"`) {
		t.Fatalf("var put: %d %q %q", code, out, stderr)
	}
	code, out, _ := cli("var", "get", "team/db")
	if code != 0 || !strings.Contains(out, "Path        = team/db") || !strings.Contains(out, "s3cret") || !strings.Contains(out, "Check Index") {
		t.Fatalf("var get: %d %q", code, out)
	}
	if code, out, _ := cli("var", "get", "-item", "cert", "team/db"); code != 0 || out != "-----BEGIN-----\nabc\n\n" {
		t.Errorf("var get -item cert: %d %q", code, out)
	}
	if code, _, stderr := cli("var", "get", "-item", "nope", "team/db"); code != ExitError || !strings.Contains(stderr, `no item "nope"`) {
		t.Errorf("var get -item nope: %d %q", code, stderr)
	}
	code, out, _ = cli("var", "get", "-json", "team/db")
	var v api.Variable
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Items["user"] != "app" || v.ModifyIndex == 0 {
		t.Fatalf("var get -json: %d %q", code, out)
	}
	// Replacing needs the index (or -force).
	if code, _, stderr := cli("var", "put", "team/db", "user=x"); code != ExitError || !strings.Contains(stderr, "-check-index") {
		t.Errorf("var put over an existing variable: %d %q", code, stderr)
	}
	if code, _, stderr := cli("var", "put", "-check-index", "1", "team/db", "user=x"); code != ExitError || !strings.Contains(stderr, "conflict") {
		t.Errorf("var put with a stale index: %d %q", code, stderr)
	}
	idx := itoa(v.ModifyIndex)
	if code, out, stderr := cli("var", "put", "-check-index", idx, "team/db", "user=dba"); code != 0 || !strings.Contains(out, "Successfully updated") {
		t.Fatalf("var put -check-index: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli("var", "put", "-force", "team/db", "user=root"); code != 0 {
		t.Fatalf("var put -force: %d %q", code, stderr)
	}
	if code, out, _ := cli("var", "get", "-item", "user", "team/db"); code != 0 || out != "root\n" {
		t.Errorf("after -force: %d %q", code, out)
	}
	if code, _, stderr := cli("var", "put", "team/x"); code != ExitUsage {
		t.Errorf("var put without items: %d %q", code, stderr)
	}
	if code, _, stderr := cli("var", "put", "bad..//p", "k=v"); code != ExitError || !strings.Contains(stderr, "invalid variable path") {
		t.Errorf("var put with a bad path: %d %q", code, stderr)
	}
	if code, _, stderr := cli("namespace", "apply", "prod"); code != 0 {
		t.Fatalf("namespace apply: %d %q", code, stderr)
	}
	if code, _, stderr := cli("var", "put", "-namespace", "prod", "team/api", "k=v"); code != 0 {
		t.Fatalf("var put -namespace: %d %q", code, stderr)
	}
	code, out, _ = cli("var", "list", "team/")
	if code != 0 || !strings.Contains(out, "team/db") || strings.Contains(out, "team/api") || strings.Contains(out, "root") {
		t.Errorf("var list team/: %d %q", code, out)
	}
	code, out, _ = cli("var", "list", "-namespace", "*", "-json")
	var list []*api.VariableMetadata
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Errorf("var list -namespace * -json: %d %q", code, out)
	}
	if code, out, stderr := cli("var", "purge", "team/db"); code != 0 || !strings.Contains(out, "Successfully purged") {
		t.Fatalf("var purge: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli("var", "get", "team/db"); code != ExitError || !strings.Contains(stderr, "not found") {
		t.Errorf("var get after purge: %d %q", code, stderr)
	}
	if code, out, _ := cli("var", "list"); code != 0 || !strings.Contains(out, "No variables found") {
		t.Errorf("var list after purge: %d %q", code, out)
	}
}

// var lock holds the lock while its command runs (another acquire is
// refused, the command sees the lock's ID), exits with the command's
// code and releases the lock.
func TestCLIVarLock(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "proceed")
	for _, p := range []string{started, proceed} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runCLI(t, "var", "lock", "-address", addr, "-ttl", "2s", "locks/leader",
			"sh", "-c", `echo "$DROVER_VAR_LOCK_ID" > "$0"; read x < "$1"; exit 3`, started, proceed)
		done <- result{code, out, errs}
	}()
	// Opening the FIFO waits for the command to write the lock ID.
	b, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(b))
	c := api.NewClient(addr)
	if _, err := c.LockVariable(t.Context(), api.VariableLockAcquire, &api.Variable{Path: "locks/leader"}, nil); !errors.Is(err, api.ErrCASConflict) {
		t.Errorf("another acquire while the command runs: %v, want a conflict", err)
	}
	if _, err := c.LockVariable(t.Context(), api.VariableLockRenew, &api.Variable{Path: "locks/leader", Lock: &api.VariableLock{ID: id}}, nil); err != nil {
		t.Errorf("renew with the command's lock ID %q: %v", id, err)
	}
	if err := os.WriteFile(proceed, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 3 {
			t.Errorf("var lock exit %d (%q), want the command's 3", r.code, r.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("var lock did not return after its command exited")
	}
	held, err := c.LockVariable(t.Context(), api.VariableLockAcquire, &api.Variable{Path: "locks/leader"}, nil)
	if err != nil || held.Lock == nil || held.Lock.ID == id {
		t.Errorf("acquire after var lock returned: %+v %v, want a new lock", held, err)
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
