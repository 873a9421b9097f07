package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// eval delete needs the eval broker paused; while it is paused evals wait
// (and can be deleted); a deleted eval the broker still held is never
// written back once the workers run again. RejectJobRegistration refuses
// job run with 403.
func TestCLIEvalDeleteAndPause(t *testing.T) {
	addr, srv := startAgentServer(t, false)
	c := api.NewClient(addr)
	ctx := context.Background()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	file := writeFile(t, t.TempDir(), "web.hcl", webHCL)
	if code, _, stderr := cli("operator", "scheduler", "set-config", "-pause-eval-broker=true"); code != 0 {
		t.Fatalf("pause: %d %q", code, stderr)
	}
	resp, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: mustLoad(t, file)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, _, err := c.Evaluation(ctx, resp.EvalID, nil); err != nil || e.Status != api.EvalStatusPending {
		t.Fatalf("eval while paused: %+v %v, want pending", e, err)
	}
	if code, out, stderr := cli("eval", "delete", "-filter", `JobID == "web"`, "-yes"); code != 0 || !strings.Contains(out, "deleted 1 ") {
		t.Fatalf("eval delete -filter: %d %q %q", code, out, stderr)
	}
	if _, _, err := c.Evaluation(ctx, resp.EvalID, nil); !isNotFound(err) {
		t.Fatalf("deleted eval: %v, want not found", err)
	}
	if code, _, stderr := cli("operator", "scheduler", "set-config", "-pause-eval-broker=false"); code != 0 {
		t.Fatalf("unpause: %d %q", code, stderr)
	}
	again, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: mustLoad(t, file)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitState(t, srv, 15*time.Second, "the eval after unpausing done", func() bool {
		e, _, err := c.Evaluation(ctx, again.EvalID, nil)
		return err == nil && e.TerminalStatus()
	})
	if _, _, err := c.Evaluation(ctx, resp.EvalID, nil); !isNotFound(err) {
		t.Errorf("the deleted eval came back after unpausing: %v", err)
	}
	if code, _, stderr := cli("eval", "delete", again.EvalID); code != ExitError || !strings.Contains(stderr, "pause it first") {
		t.Errorf("eval delete with the broker running: %d %q", code, stderr)
	}
	if code, _, _ := cli("eval", "delete"); code != ExitUsage {
		t.Errorf("eval delete without IDs or filter: %d, want 2", code)
	}
	if code, _, stderr := cli("operator", "scheduler", "set-config", "-reject-job-registration=true"); code != 0 {
		t.Fatalf("reject: %d %q", code, stderr)
	}
	if code, _, stderr := cli("job", "run", "-detach", file); code != ExitError || !strings.Contains(stderr, "RejectJobRegistration") {
		t.Errorf("job run with registration rejected: %d %q", code, stderr)
	}
}

func isNotFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Status == 404
}

func mustLoad(t *testing.T, path string) *api.Job {
	t.Helper()
	j, err := loadJob(path, nil, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
