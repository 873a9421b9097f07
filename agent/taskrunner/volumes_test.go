package taskrunner

import (
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/google/go-cmp/cmp"
)

func TestVolumeMounts(t *testing.T) {
	job := &api.Job{ID: "j", TaskGroups: []*api.TaskGroup{{Name: "g", Volumes: map[string]*api.VolumeRequest{
		"models": {Name: "models", Type: "host", Source: "weights"},
		"data":   {Name: "data", Type: "host", Source: "datasets", ReadOnly: true},
		"ro":     {Name: "ro", Type: "host", Source: "frozen", ReadOnly: true},
		"rw":     {Name: "rw", Type: "host", Source: "frozen"},
		"gone":   {Name: "gone", Type: "host", Source: "missing"},
	}}}}
	alloc := &api.Allocation{ID: "a", TaskGroup: "g", Job: job}
	node := &api.Node{HostVolumes: map[string]*api.ClientHostVolumeConfig{
		"weights":  {Name: "weights", Path: "/srv/weights"},
		"datasets": {Name: "datasets", Path: "/srv/data"},
		"frozen":   {Name: "frozen", Path: "/srv/frozen", ReadOnly: true},
	}}
	task := &api.Task{Name: "t", VolumeMounts: []*api.VolumeMount{
		{Volume: "models", Destination: "/models"},
		{Volume: "models", Destination: "/models-ro", ReadOnly: true},
		{Volume: "data", Destination: "/data"},
		{Volume: "ro", Destination: "/frozen", ReadOnly: true},
	}}
	task.VolumeMounts = append(task.VolumeMounts, &api.VolumeMount{Volume: "models", Destination: "${NOMAD_TASK_DIR}/models"})
	env := map[string]string{"NOMAD_TASK_DIR": "/local"}
	got, err := VolumeMounts(alloc, task, node, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []*drivers.MountSpec{
		{HostPath: "/srv/weights", TaskPath: "/models"},
		{HostPath: "/srv/weights", TaskPath: "/models-ro", Readonly: true},
		{HostPath: "/srv/data", TaskPath: "/data", Readonly: true},
		{HostPath: "/srv/frozen", TaskPath: "/frozen", Readonly: true},
		{HostPath: "/srv/weights", TaskPath: "/local/models"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		m    *api.VolumeMount
		want string
	}{
		{&api.VolumeMount{Volume: "nope", Destination: "/x"}, `group "g" has no volume "nope"`},
		{&api.VolumeMount{Volume: "gone", Destination: "/x"}, `this node has no host volume "missing"`},
		{&api.VolumeMount{Volume: "rw", Destination: "/x", ReadOnly: true}, `host volume "frozen" is read-only`},
		{&api.VolumeMount{Volume: "models", Destination: "${NOMAD_UNSET}/x"}, `destination "${NOMAD_UNSET}/x" (from "${NOMAD_UNSET}/x") must be an absolute path`},
		{&api.VolumeMount{Volume: "models", Destination: "${NOMAD_TASK_DIR}/../etc"}, `destination "/local/../etc"`},
	} {
		_, err := VolumeMounts(alloc, &api.Task{Name: "t", VolumeMounts: []*api.VolumeMount{c.m}}, node, env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.m, err, c.want)
		}
	}
}
