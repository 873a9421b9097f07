package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/internal/testproc"
)

// TestCLIAllocExec runs `drover alloc exec` against a real dev agent
// (server and client in process) whose raw_exec task runs under the
// drover supervisor binary.
func TestCLIAllocExec(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev agent")
	}
	bin, cleanup, err := testproc.DroverBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no drover binary: %v", err)
	}
	t.Cleanup(cleanup)
	cfg := config.Dev()
	cfg.Ports.HTTP = 0 // any free port: the agent binds it before advertising it
	cfg.Ports.Raft = 0 // with a data dir Raft listens on TCP: any free port too
	cfg.Name = "exec-test"
	cfg.DataDir = t.TempDir()
	cfg.Plugins["raw_exec"]["executor_path"] = bin
	a := testcluster.StartAgent(t, cfg)
	ctx := context.Background()
	addr := "http://" + a.HTTPAddr()
	c := api.NewClient(addr)
	job := &api.Job{ID: "sh", Name: "sh", Type: api.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: "raw_exec",
			Config:    map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
			Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	var allocID string
	testcluster.WaitReady(t, a.Server()) // writes need the leader
	if _, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatalf("register job: %v", err)
	}
	testcluster.WaitState(t, a.Server(), 30*time.Second, "the task running", func() bool {
		as, _, err := c.JobAllocations(ctx, "sh", nil)
		if err == nil && len(as) == 1 && as[0].TaskStates["t"] != nil && as[0].TaskStates["t"].State == api.TaskStateRunning {
			allocID = as[0].ID
		}
		return allocID != ""
	})

	exec := func(stdin string, args ...string) (int, string, string) {
		resetExecFlags(t)
		rootCmd.SetIn(strings.NewReader(stdin))
		defer rootCmd.SetIn(nil)
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"alloc", "exec", "-address", addr}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	// Task omitted (one task), an alloc ID prefix, flags of the remote
	// command left alone.
	code, out, errOut := exec("hi\n", allocID[:8], "/bin/sh", "-c", "read x; echo got:$x; echo err >&2; exit 7")
	if code != 7 || out != "got:hi\n" || errOut != "err\n" {
		t.Errorf("alloc exec = %d, stdout %q, stderr %q; want 7, %q, %q", code, out, errOut, "got:hi\n", "err\n")
	}
	code, out, _ = exec("", "-task", "t", "-i=false", allocID, "--", "/bin/echo", "-n", "ok")
	if code != 0 || out != "ok" {
		t.Errorf("alloc exec -task t -i=false = %d, stdout %q", code, out)
	}
	code, out, _ = exec("", "-t", allocID, "/bin/sh", "-c", "test -t 1 && echo tty")
	if code != 0 || !strings.Contains(out, "tty") {
		t.Errorf("alloc exec -t = %d, output %q", code, out)
	}
	t.Run("local terminal", func(t *testing.T) {
		// stdin is a real pseudo-terminal: -t is the default, the local
		// terminal goes raw for the session and its size reaches the
		// remote pty.
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		defer ptmx.Close()
		defer tty.Close()
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 21, Cols: 77}); err != nil {
			t.Fatal(err)
		}
		before, err := term.GetState(int(tty.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		resetExecFlags(t)
		rootCmd.SetIn(tty)
		defer rootCmd.SetIn(nil)
		var out, errb bytes.Buffer
		script := `i=0; while [ "$(stty size)" != "21 77" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; stty size; exit 3`
		code := run(ctx, []string{"alloc", "exec", "-address", addr, allocID, "/bin/sh", "-c", script}, &out, &errb)
		if code != 3 || !strings.Contains(out.String(), "21 77") {
			t.Errorf("alloc exec on a terminal = %d, output %q, stderr %q", code, out.String(), errb.String())
		}
		after, err := term.GetState(int(tty.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if *after != *before {
			t.Error("terminal mode not restored after alloc exec")
		}
	})
	if code, _, errOut = exec("", "-task", "nope", allocID, "true"); code != ExitError || !strings.Contains(errOut, "unknown task") {
		t.Errorf("alloc exec into an unknown task = %d, %q", code, errOut)
	}
	if code, _, _ = exec("", allocID); code != ExitUsage {
		t.Errorf("alloc exec without a command = %d, want %d", code, ExitUsage)
	}
}

// resetExecFlags undoes the flags an earlier in-process run left set on
// the shared command tree, so that each run sees the defaults.
func resetExecFlags(t *testing.T) {
	t.Helper()
	cmd, _, err := rootCmd.Find([]string{"alloc", "exec"})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err := f.Value.Set(f.DefValue); err != nil {
			t.Fatal(err)
		}
		f.Changed = false
	})
}
