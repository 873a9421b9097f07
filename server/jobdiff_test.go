package server

import (
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

func diffJob(count int, image string) *api.Job {
	return &api.Job{ID: "web", Type: api.JobTypeService, Priority: 50, Version: uint64(count),
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: count, Tasks: []*api.Task{{Name: "t", Driver: "exec",
			Config: map[string]any{"command": image}}}}}}
}

func TestJobDiff(t *testing.T) {
	if d := jobDiff(nil, diffJob(1, "a")); d.Type != api.DiffTypeAdded || len(d.TaskGroups) != 1 || d.TaskGroups[0].Type != api.DiffTypeAdded {
		t.Fatalf("new job diff = %+v", d)
	}
	if d := jobDiff(diffJob(1, "a"), diffJob(1, "a")); d.Type != api.DiffTypeNone || len(d.TaskGroups) != 0 {
		t.Fatalf("same job diff = %+v", d)
	}
	d := jobDiff(diffJob(1, "a"), diffJob(3, "b"))
	if d.Type != api.DiffTypeEdited || len(d.Fields) != 0 {
		t.Fatalf("edited job diff = %+v (Version must be ignored)", d)
	}
	g := d.TaskGroups[0]
	if g.Type != api.DiffTypeEdited || len(g.Fields) != 1 || g.Fields[0].Name != "Count" || g.Fields[0].Old != "1" || g.Fields[0].New != "3" {
		t.Fatalf("group diff = %+v fields %+v", g, g.Fields)
	}
	if len(g.Tasks) != 1 || len(g.Tasks[0].Fields) != 1 || g.Tasks[0].Fields[0].Name != "Config.command" {
		t.Fatalf("task diff = %+v", g.Tasks)
	}
}

// Durations diff as durations and config numbers without exponents
// (they printed as 8.64e+13).
func TestJobDiffFormatsValues(t *testing.T) {
	old, new := diffJob(1, "a"), diffJob(1, "a")
	old.Update = &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second}
	new.Update = &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 24 * time.Hour}
	old.TaskGroups[0].Tasks[0].Config["ttl"] = float64(1000)
	new.TaskGroups[0].Tasks[0].Config["ttl"] = float64(86400000000000)
	d := jobDiff(old, new)
	got := map[string][2]string{}
	for _, f := range d.Fields {
		got[f.Name] = [2]string{f.Old, f.New}
	}
	for _, f := range d.TaskGroups[0].Tasks[0].Fields {
		got[f.Name] = [2]string{f.Old, f.New}
	}
	if got["Update.MinHealthyTime"] != [2]string{"10s", "24h0m0s"} {
		t.Errorf("duration diff %v, want 10s => 24h0m0s (all: %v)", got["Update.MinHealthyTime"], got)
	}
	if got["Config.ttl"] != [2]string{"1000", "86400000000000"} {
		t.Errorf("number diff %v, want 1000 => 86400000000000", got["Config.ttl"])
	}
}

// A new job's diff marks every field the job file left to its default
// (api.FieldDefault), so `job plan` shows only what the file sets; the
// API keeps them all, as Nomad's does.
func TestJobDiffNewJobMarksDefaults(t *testing.T) {
	src := `job "web" {
  type = "batch"
  update { max_parallel = 2 }
  group "g" {
    count = 2
    restart { attempts = 5 }
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      resources { memory = 128 }
    }
  }
}`
	job, err := jobspec.Parse("web.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	d := jobDiff(nil, job)
	set := func(fs []*api.FieldDiff) (names []string, all int) {
		for _, f := range fs {
			if f.Type != api.DiffTypeAdded {
				t.Errorf("field %s: type %s, want Added", f.Name, f.Type)
			}
			if !slices.Contains(f.Annotations, api.FieldDefault) {
				names = append(names, f.Name+"="+f.New)
			}
		}
		return names, len(fs)
	}
	jobSet, jobAll := set(d.Fields)
	if len(d.TaskGroups) != 1 || len(d.TaskGroups[0].Tasks) != 1 {
		t.Fatalf("diff %+v: want one added group with one task", d)
	}
	groupSet, groupAll := set(d.TaskGroups[0].Fields)
	taskSet, taskAll := set(d.TaskGroups[0].Tasks[0].Fields)
	for _, c := range []struct {
		what      string
		got, want []string
		all       int
	}{
		{"job", jobSet, []string{"Type=batch", "Update.MaxParallel=2"}, jobAll},
		// The group's update is the job's (inherited, so not repeated).
		{"group", groupSet, []string{"Count=2", "RestartPolicy.Attempts=5"}, groupAll},
		// The task's restart policy is the group's.
		{"task", taskSet, []string{"Config.command=/bin/true", "Driver=exec", "Resources.MemoryMB=128"}, taskAll},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s fields shown = %q, want %q", c.what, c.got, c.want)
		}
		if c.all <= len(c.want) {
			t.Errorf("%s: %d fields in the diff, want the defaults kept in the API too", c.what, c.all)
		}
	}
}
