package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// A job submitted as JSON never went through jobspec: the server refuses
// job IDs, group and task names that are not one path element (a task
// named ".." made the client's alloc root its task dir; a job ".." could
// not be stopped, its URL cleaned away), and stores nothing.
func TestRegisterJobRefusesPathNames(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		set  func(j *api.Job)
		want string
	}{
		{"job ..", func(j *api.Job) { j.ID = ".." }, `invalid job ID ".."`},
		{"job .", func(j *api.Job) { j.ID = "." }, `invalid job ID "."`},
		{"job backslash", func(j *api.Job) { j.ID = `x\y` }, `invalid job ID`},
		{"group ..", func(j *api.Job) { j.TaskGroups[0].Name = ".." }, "invalid group name"},
		{"task ..", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Name = ".." }, "invalid task name"},
		{"task .", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Name = "." }, "invalid task name"},
		{"task slash", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Name = "../x" }, "invalid task name"},
		{"task control", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Name = "t\x1b[2J" }, "control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob("names", 1, 100, 64)
			c.set(j)
			_, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: j})
			if !errors.Is(err, api.ErrInvalidJob) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("RegisterJob = %v, want ErrInvalidJob naming %q", err, c.want)
			}
			if got, _ := s.State().JobByID(nil, api.DefaultNamespace, j.ID); got != nil {
				t.Fatalf("job %q was stored", j.ID)
			}
		})
	}

	// Names Nomad users write are kept.
	j := testJob("web.v2", 1, 100, 64)
	j.TaskGroups[0].Name, j.TaskGroups[0].Tasks[0].Name = "a..b", "tâche-1"
	registerJob(t, s, j)

	// A dispatch prefix goes into the child's job ID.
	p := testJob("report", 1, 100, 64)
	p.Type = api.JobTypeBatch
	p.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "optional"}
	registerJob(t, s, p)
	for _, prefix := range []string{"a/b", "x\x00", "two words"} {
		_, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "report", &api.JobDispatchRequest{IdPrefixTemplate: prefix})
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "id_prefix_template") {
			t.Errorf("dispatch with prefix %q: %v, want a bad request", prefix, err)
		}
	}
	resp, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "report", &api.JobDispatchRequest{IdPrefixTemplate: "nightly.v2"})
	if err != nil || !strings.HasPrefix(resp.DispatchedJobID, "report/dispatch-nightly.v2-") {
		t.Errorf("dispatch with prefix nightly.v2 = %+v, %v", resp, err)
	}
}
