package taskrunner

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// VolumeMounts resolves the task's volume_mount blocks to bind mounts of
// the node's host volumes. A mount is read-only when the mount, the
// group's volume request or the client's host volume says so. A
// destination is interpolated with the task's env and the node, as
// Nomad does (destination = "${NOMAD_TASK_DIR}/data"), and must then be
// an absolute path without "..".
func VolumeMounts(alloc *api.Allocation, task *api.Task, node *api.Node, env map[string]string) ([]*drivers.MountSpec, error) {
	if len(task.VolumeMounts) == 0 {
		return nil, nil
	}
	var tg *api.TaskGroup
	if alloc.Job != nil {
		tg = alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	}
	var out []*drivers.MountSpec
	for _, m := range task.VolumeMounts {
		var req *api.VolumeRequest
		if tg != nil {
			req = tg.Volumes[m.Volume]
		}
		if req == nil {
			return nil, fmt.Errorf("volume_mount: group %q has no volume %q", alloc.TaskGroup, m.Volume)
		}
		var hv *api.ClientHostVolumeConfig
		if node != nil {
			hv = node.HostVolumes[req.Source]
		}
		if hv == nil {
			return nil, fmt.Errorf("volume %q: this node has no host volume %q", m.Volume, req.Source)
		}
		if !node.HostVolumeOK(req) {
			return nil, fmt.Errorf("volume %q: host volume %q is read-only; set read_only = true in the volume block", m.Volume, req.Source)
		}
		dest := Interpolate(m.Destination, env, node)
		if !path.IsAbs(dest) || slices.Contains(strings.Split(dest, "/"), "..") {
			return nil, fmt.Errorf("volume %q: destination %q (from %q) must be an absolute path without ..", m.Volume, dest, m.Destination)
		}
		out = append(out, &drivers.MountSpec{HostPath: hv.Path, TaskPath: dest, Readonly: m.ReadOnly || req.ReadOnly || hv.ReadOnly})
	}
	return out, nil
}
