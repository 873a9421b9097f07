package agent_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
)

// varsJob's task copies its rendered template into local/seen when it
// starts; the template reads the job's variable with the task's workload
// identity and restarts the task when the variable changes.
const varsJob = `job "app" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cp \"$NOMAD_TASK_DIR/conf\" \"$NOMAD_TASK_DIR/seen\"; exec sleep 3600"]
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/app\" }}user={{ .user }}{{ end }}"
        destination = "local/conf"
        change_mode = "restart"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestE2EVariablesTemplate: on a dev agent with ACLs on, a task's
// template reads nomad/jobs/<job> with the task's workload identity (no
// policy grants it); a new value written with `drover var put` reaches
// the running task: the template is re-rendered and, change_mode
// restart, the task restarts and sees it.
func TestE2EVariablesTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the agent; -short")
	}
	httpPort := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	p := startAgent(t, "-dev", "-acl-enabled", "-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)
	var boot api.ACLToken
	if code := call(t, "POST", base+"/v1/acl/bootstrap", "", &boot); code != 200 {
		t.Fatalf("bootstrap = %d", code)
	}
	c := api.NewClient(base)
	c.Token = boot.SecretID
	ctx := context.Background()
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(droverBin(t), append(args, "-address", base, "-token", boot.SecretID)...).CombinedOutput()
		if err != nil {
			t.Fatalf("drover %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cli("var", "put", "nomad/jobs/app", "user=one")
	job, err := jobspec.Parse("app.hcl", []byte(varsJob), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	testproc.Eventually(t, 30*time.Second, "the task running", func() bool {
		stubs, _, err := c.JobAllocations(ctx, "app", nil)
		if err != nil {
			return false
		}
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				allocID = s.ID
			}
		}
		return allocID != ""
	})
	seen := func() string {
		r, err := c.FSCat(ctx, allocID, "t/local/seen")
		if err != nil {
			return ""
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	testproc.Eventually(t, 20*time.Second, "the task seeing user=one", func() bool { return seen() == "user=one" })

	cli("var", "put", "-force", "nomad/jobs/app", "user=two")
	testproc.Eventually(t, 30*time.Second, "the restarted task seeing user=two", func() bool { return seen() == "user=two" })
	// The servers hear of the restart with the client's next alloc update.
	testproc.Eventually(t, 10*time.Second, "the restart for the template's change_mode reported", func() bool {
		a, _, err := c.Allocation(ctx, allocID, nil)
		return err == nil && a.TaskStates["t"] != nil && a.TaskStates["t"].Restarts >= 1
	})
	// The identity reads its job's variable, and nothing else.
	if code := call(t, "GET", base+"/v1/var/nomad/jobs/app", "", nil); code != http.StatusForbidden {
		t.Errorf("an anonymous read = %d, want 403", code)
	}
}
