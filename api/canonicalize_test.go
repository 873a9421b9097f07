package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func minimalJob() *Job {
	return &Job{ID: "j", TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{Name: "t", Driver: "exec"}}}}}
}

func TestCanonicalizeDefaults(t *testing.T) {
	j := minimalJob()
	j.Type = JobTypeBatch
	j.Update = &UpdateStrategy{MaxParallel: 2}
	j.TaskGroups[0].Tasks[0].Templates = []*Template{{DestPath: "local/x", EmbeddedTmpl: "x"}}
	j.Canonicalize()
	tg, task := j.TaskGroups[0], j.TaskGroups[0].Tasks[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", j.Namespace, DefaultNamespace},
		{"region", j.Region, DefaultRegion},
		{"priority", j.Priority, DefaultPriority},
		{"datacenters", j.Datacenters, []string{"*"}},
		{"node pool", j.NodePool, DefaultNodePool},
		{"name", j.Name, "j"},
		{"job update filled", j.Update.HealthyDeadline, 5 * time.Minute},
		{"job update kept", j.Update.MaxParallel, 2},
		{"group update inherited", tg.Update.MaxParallel, 2},
		{"restart", tg.RestartPolicy, DefaultRestartPolicy(JobTypeBatch)},
		{"reschedule", tg.ReschedulePolicy, DefaultReschedulePolicy(JobTypeBatch)},
		{"disk", tg.EphemeralDisk.SizeMB, DefaultDiskMB},
		{"resources", task.Resources, DefaultResources()},
		{"kill timeout", task.KillTimeout, DefaultKillTimeout},
		{"logs", task.LogConfig, DefaultLogConfig()},
		{"task restart", task.RestartPolicy, tg.RestartPolicy},
		{"template change mode", task.Templates[0].ChangeMode, DefaultTemplateChangeMode},
		{"count untouched", tg.Count, 1},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if task.RestartPolicy == tg.RestartPolicy {
		t.Error("task restart policy aliases the group's")
	}
	before, _ := json.Marshal(j)
	j.Canonicalize()
	after, _ := json.Marshal(j)
	if string(before) != string(after) {
		t.Errorf("Canonicalize is not idempotent:\n%s\n%s", before, after)
	}
	if err := j.Validate(); err != nil {
		t.Errorf("canonical job invalid: %v", err)
	}
}

func TestCanonicalizeSystemNoReschedule(t *testing.T) {
	j := minimalJob()
	j.Type = JobTypeSystem
	j.Canonicalize()
	if j.TaskGroups[0].ReschedulePolicy != nil {
		t.Errorf("system job got reschedule policy %+v", j.TaskGroups[0].ReschedulePolicy)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(j *Job)
		want   []string
	}{
		{"missing id", func(j *Job) { j.ID = "" }, []string{"missing job ID"}},
		{"bad type", func(j *Job) { j.Type = "daemon" }, []string{`invalid job type "daemon"`}},
		{"priority", func(j *Job) { j.Priority = 101 }, []string{"priority 101 out of range"}},
		{"no groups", func(j *Job) { j.TaskGroups = nil }, []string{"no task groups"}},
		{"negative count", func(j *Job) { j.TaskGroups[0].Count = -1 }, []string{"count -1 must not be negative"}},
		{"duplicate group", func(j *Job) { j.TaskGroups = append(j.TaskGroups, j.TaskGroups[0]) }, []string{`duplicate group "g"`}},
		{"duplicate task", func(j *Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "t", Driver: "exec"})
		}, []string{`duplicate task "t"`}},
		{"missing driver", func(j *Job) { j.TaskGroups[0].Tasks[0].Driver = "" }, []string{`task "t": missing driver`}},
		{"no tasks", func(j *Job) { j.TaskGroups[0].Tasks = nil }, []string{"group has no tasks"}},
		{"bad operator", func(j *Job) { j.Constraints = []*Constraint{{LTarget: "a", RTarget: "b", Operand: "~"}} }, []string{`invalid operator "~"`}},
		{"device operator", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Resources.Devices = []*RequestedDevice{{Name: "gpu", Count: 1, Constraints: []*Constraint{{LTarget: "a", Operand: "≈"}}}}
		}, []string{`device "gpu": constraint: invalid operator`}},
		{"affinity weight", func(j *Job) { j.Affinities = []*Affinity{{LTarget: "a", RTarget: "b", Operand: "=", Weight: 120}} }, []string{"weight 120"}},
		{"lifecycle", func(j *Job) { j.TaskGroups[0].Tasks[0].Lifecycle = &TaskLifecycle{Hook: "later"} }, []string{`invalid hook "later"`}},
		{"restart mode", func(j *Job) { j.TaskGroups[0].RestartPolicy.Mode = "retry" }, []string{`restart: invalid mode "retry"`}},
		{"spread sum", func(j *Job) {
			j.Spreads = []*Spread{{Attribute: "a", Weight: 50, SpreadTarget: []*SpreadTarget{{Value: "x", Percent: 80}, {Value: "y", Percent: 40}}}}
		}, []string{"sum to 120"}},
		{"ports", func(j *Job) {
			j.TaskGroups[0].Networks = []*NetworkResource{{ReservedPorts: []Port{{Label: "http", Value: 70000}}, DynamicPorts: []Port{{Label: "http"}}}}
		}, []string{`port "http" out of range`, `duplicate port "http"`}},
		{"periodic", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true} }, []string{"missing cron spec"}},
		{"bridge with raw_exec", func(j *Job) {
			j.TaskGroups[0].Networks = []*NetworkResource{{Mode: "bridge"}}
			j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
		}, []string{`driver raw_exec cannot join a bridge network`}},
		{"volumes", func(j *Job) {
			j.TaskGroups[0].Volumes = map[string]*VolumeRequest{"a": {Type: "csi", Source: "a"}, "b": {Type: "host"}}
			j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
			j.TaskGroups[0].Tasks[0].VolumeMounts = []*VolumeMount{{Volume: "c", Destination: "/c"}, {Volume: "b", Destination: "rel"}, {Volume: "b", Destination: "/b"}}
		}, []string{`volume "a": type csi is not supported`, `volume "b": missing source`, `volume "c" is not a volume of the group`,
			`destination "rel" must be an absolute path`, `driver raw_exec cannot mount volumes`}},
		{"several at once", func(j *Job) {
			j.Priority = 0
			j.TaskGroups[0].Count = -2
			j.TaskGroups[0].Tasks[0].Driver = ""
		}, []string{"priority 0", "count -2", "missing driver"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := minimalJob()
			j.Canonicalize()
			tt.mutate(j)
			err := j.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want problems")
			}
			if !errors.Is(err, ErrInvalidJob) {
				t.Errorf("errors.Is(err, ErrInvalidJob) = false for %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok || len(joined.Unwrap()) < len(tt.want) {
				t.Errorf("want at least %d joined problems, got %v", len(tt.want), err)
			}
			if got := AsError(err); got.Code != ErrInvalidJob.Code || got.Status != 400 {
				t.Errorf("AsError = %+v, want invalid_job/400", got)
			}
		})
	}
}

// What Nomad accepts at registration and leaves to the clients is valid:
// a bridge network and volume mounts for a driver drover does not run
// (the job stays pending there), and a mount destination the client
// interpolates.
func TestValidateLeavesDriversToClients(t *testing.T) {
	for _, driver := range []string{"docker", "podman", "exec", "containerd"} {
		j := minimalJob()
		j.Canonicalize()
		tg := j.TaskGroups[0]
		tg.Networks = []*NetworkResource{{Mode: "bridge"}}
		tg.Volumes = map[string]*VolumeRequest{"data": {Type: VolumeTypeHost, Source: "data"}}
		tg.Tasks[0].Driver = driver
		tg.Tasks[0].VolumeMounts = []*VolumeMount{{Volume: "data", Destination: "${NOMAD_TASK_DIR}/data"}, {Volume: "data", Destination: "/srv"}}
		if err := j.Validate(); err != nil {
			t.Errorf("driver %s: Validate() = %v, want nil", driver, err)
		}
	}
}
