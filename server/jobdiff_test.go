package server

import (
	"testing"
	"time"

	"github.com/drover/drover/api"
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
