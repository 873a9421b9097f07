package taskrunner

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// GPU sharing on the client. A task holding a share of GPUs
// (api.AllocatedDeviceResource.Share) gets its share in its env; under
// MPS the client also runs each GPU's MPS control daemon (MPSDaemons)
// and the CUDA driver enforces the task's compute and memory limits;
// under time-slicing nothing isolates the tasks on a GPU, and the task
// is told so.
//
// MPS and tasks with shares of several GPUs: a CUDA process talks to one
// MPS control daemon (one CUDA_MPS_PIPE_DIRECTORY), and each daemon here
// serves one GPU, so no single process reaches two GPUs' shares through
// MPS. (A daemon per task's set of GPUs would let two daemons, each with
// its own limits, drive one GPU.) Such a task gets CUDA_MPS_PIPE_DIRECTORY
// of its first MPS GPU and, in DROVER_MPS_PIPE_DIRECTORIES, each GPU with
// its daemon's directory, so a launcher running one process per GPU
// (torchrun's workers) gives each worker one GPU in CUDA_VISIBLE_DEVICES
// and that GPU's directory; a task event says so.

// Env of a task holding GPU shares, besides the CUDA_MPS_* of MPS.
const (
	// EnvGPUShare is the task's share of each of its shared GPUs' compute
	// as a fraction ("0.25"; the smallest where it holds several).
	// PyTorch users may pass it to torch.cuda.set_per_process_memory_fraction.
	EnvGPUShare = "DROVER_GPU_SHARE"
	// EnvGPUMemoryLimit is the memory the task may use on each of its
	// shared GPUs, in MiB (as DROVER_MEMORY_LIMIT is in MB): the share's
	// memory, else its fraction of the GPU's fingerprinted memory; the
	// smallest where it holds several; unset when the GPU's memory is
	// unknown. MPS enforces it (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT); under
	// time-slicing it is advisory, for frameworks that honour a limit.
	EnvGPUMemoryLimit = "DROVER_GPU_MEMORY_LIMIT"
	// EnvMPSPipeDirectories is "<uuid>=<dir>,..." for a task with MPS
	// shares of several GPUs: each GPU and its daemon's pipe directory
	// as the task sees it (see above).
	EnvMPSPipeDirectories = "DROVER_MPS_PIPE_DIRECTORIES"
)

// MPSDaemons runs the MPS control daemons of a client's shared GPUs
// (agent/gpushare's Manager satisfies it). A holder is one task
// ("<alloc ID>/<task>"); Acquire is idempotent per holder and GPU and
// returns the daemons' host pipe directories by GPU UUID; Release drops
// every GPU the holder holds.
type MPSDaemons interface {
	Acquire(ctx context.Context, holder string, gpus []string) (map[string]string, error)
	Release(ctx context.Context, holder string)
}

// MPSTaskDir is where drivers that mount the task dirs show GPU uuid's
// MPS pipe directory inside the task.
func MPSTaskDir(uuid string) string { return path.Join("/run/nvidia-mps", uuid) }

// MPSGPUs returns the task's NVIDIA GPUs shared in MPS mode, in
// allocation order.
func MPSGPUs(tr *api.AllocatedTaskResources) []string {
	if tr == nil {
		return nil
	}
	var ids []string
	for _, d := range tr.Devices {
		if d.Vendor == drivers.VendorNvidia && d.Share != nil && d.Share.Mode == api.ShareModeMPS {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	return ids
}

// gpuShareEnv adds the env of the task's GPU shares to v: DROVER_GPU_SHARE
// and DROVER_GPU_MEMORY_LIMIT for any share; for MPS shares
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (the burst limit, else the share, in
// whole percent, at least 1; the smallest of the MPS shares),
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<uuid>=<MiB>M", comma-joined), and
// CUDA_MPS_PIPE_DIRECTORY from pipes (the pipe directories as the task
// sees them, by GPU UUID).
func gpuShareEnv(v map[string]string, tr *api.AllocatedTaskResources, node *api.Node, pipes map[string]string) {
	minMilli, minMiB, threads := 0, int64(0), 0
	var mpsIDs, memLimits []string
	for _, d := range tr.Devices {
		sh := d.Share
		if d.Vendor != drivers.VendorNvidia || sh == nil || len(d.DeviceIDs) == 0 {
			continue
		}
		if minMilli == 0 || sh.Milli < minMilli {
			minMilli = sh.Milli
		}
		mps := sh.Mode == api.ShareModeMPS
		if mps {
			limit := sh.LimitMilli
			if limit <= 0 {
				limit = sh.Milli
			}
			pct := min(100, max(1, (limit+9)/10))
			if threads == 0 || pct < threads {
				threads = pct
			}
		}
		for _, id := range d.DeviceIDs {
			mib := shareMemoryMiB(sh, deviceMemoryMiB(node, id))
			if mib > 0 && (minMiB == 0 || mib < minMiB) {
				minMiB = mib
			}
			if mps {
				mpsIDs = append(mpsIDs, id)
				if mib > 0 {
					memLimits = append(memLimits, id+"="+strconv.FormatInt(mib, 10)+"M")
				}
			}
		}
	}
	if minMilli == 0 {
		return
	}
	v[EnvGPUShare] = strconv.FormatFloat(float64(minMilli)/api.MilliPerDevice, 'f', -1, 64)
	if minMiB > 0 {
		v[EnvGPUMemoryLimit] = strconv.FormatInt(minMiB, 10)
	}
	if len(mpsIDs) == 0 {
		return
	}
	v["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = strconv.Itoa(threads)
	if len(memLimits) > 0 {
		v["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = strings.Join(memLimits, ",")
	}
	if dir := pipes[mpsIDs[0]]; dir != "" {
		v["CUDA_MPS_PIPE_DIRECTORY"] = dir
	}
	if len(mpsIDs) > 1 {
		pairs := make([]string, 0, len(mpsIDs))
		for _, id := range mpsIDs {
			if dir := pipes[id]; dir != "" {
				pairs = append(pairs, id+"="+dir)
			}
		}
		if len(pairs) > 0 {
			v[EnvMPSPipeDirectories] = strings.Join(pairs, ",")
		}
	}
}

// shareMemoryMiB is a share's memory on a GPU of memMiB (0: unknown):
// the memory asked (or recorded by the scheduler), else the share's
// thousandths of the GPU's memory, rounded down; 0 when unknown.
func shareMemoryMiB(sh *api.AllocatedShare, memMiB int64) int64 {
	if sh.MemoryMB > 0 {
		return sh.MemoryMB
	}
	if memMiB <= 0 {
		return 0
	}
	return max(1, int64(sh.Milli)*memMiB/api.MilliPerDevice)
}

// deviceMemoryMiB is the memory of NVIDIA instance id: its device group's
// memory (api.NodeDeviceResource.MemoryMB, as the scheduler reads it);
// 0 when unknown.
func deviceMemoryMiB(node *api.Node, id string) int64 {
	if node == nil || node.NodeResources == nil {
		return 0
	}
	for _, g := range node.NodeResources.Devices {
		if g.Vendor != drivers.VendorNvidia {
			continue
		}
		for _, inst := range g.Instances {
			if inst.ID != id {
				continue
			}
			return g.MemoryMB()
		}
	}
	return 0
}

// mpsHolder is the task's holder name for MPSDaemons.
func (tr *TaskRunner) mpsHolder() string { return tr.cfg.Alloc.ID + "/" + tr.cfg.Task.Name }

// mpsSetup acquires the MPS daemons of the task's MPS GPUs: the pipe
// directories as the task sees them (for BuildEnv) and, for drivers that
// mount the task dirs, the mounts that show them at MPSTaskDir. A task
// asking for MPS fails here when the client cannot run the daemons.
func (tr *TaskRunner) mpsSetup(ctx context.Context, res *api.AllocatedTaskResources) (map[string]string, []*drivers.MountSpec, error) {
	gpus := MPSGPUs(res)
	if len(gpus) == 0 {
		return nil, nil, nil
	}
	if tr.cfg.MPS == nil {
		return nil, nil, fmt.Errorf("GPU share in MPS mode: this client runs no MPS daemons")
	}
	host, err := tr.cfg.MPS.Acquire(ctx, tr.mpsHolder(), gpus)
	if err != nil {
		return nil, nil, fmt.Errorf("GPU share in MPS mode: %w", err)
	}
	if !tr.cfg.MountedDirs {
		return host, nil, nil
	}
	seen := map[string]string{}
	var mounts []*drivers.MountSpec
	for _, id := range gpus {
		if _, ok := seen[id]; ok || host[id] == "" {
			continue
		}
		seen[id] = MPSTaskDir(id)
		mounts = append(mounts, &drivers.MountSpec{HostPath: host[id], TaskPath: MPSTaskDir(id)})
	}
	return seen, mounts, nil
}

// mpsReattach makes a task found running after an agent restart a holder
// of its daemons again (adopting them; see agent/gpushare).
func (tr *TaskRunner) mpsReattach(ctx context.Context) {
	tr.mu.Lock()
	res := taskResources(tr.alloc, tr.task)
	tr.mu.Unlock()
	gpus := MPSGPUs(res)
	if len(gpus) == 0 || tr.cfg.MPS == nil {
		return
	}
	if _, err := tr.cfg.MPS.Acquire(ctx, tr.mpsHolder(), gpus); err != nil {
		tr.log.Warn("MPS daemons of a reattached task", "error", err)
	}
}

// mpsRelease lets the task's daemons go once the task is dead; a runner
// ending with its task alive (agent shutdown) keeps them.
func (tr *TaskRunner) mpsRelease(ctx context.Context) {
	if tr.cfg.MPS == nil || !tr.IsDead() {
		return
	}
	tr.cfg.MPS.Release(context.WithoutCancel(ctx), tr.mpsHolder())
}

// shareWarnings tells the task what its GPU shares do not isolate.
func (tr *TaskRunner) shareWarnings(res *api.AllocatedTaskResources) {
	if res == nil {
		return
	}
	timeSliced := 0
	for _, d := range res.Devices {
		if d.Vendor == drivers.VendorNvidia && d.Share != nil && d.Share.Mode != api.ShareModeMPS {
			timeSliced += len(d.DeviceIDs)
		}
	}
	if timeSliced > 0 {
		msg := "GPU shared by time-slicing: no isolation of compute or memory from the other tasks on it; " +
			EnvGPUShare + " and " + EnvGPUMemoryLimit + " (MiB) are limits for the task to honour"
		tr.log.Warn("time-sliced GPU share: no isolation", "gpus", timeSliced)
		tr.emit(&api.TaskEvent{Type: api.TaskSetup, DisplayMessage: msg, Details: map[string]string{"gpu_share_mode": api.ShareModeTimeSlicing}})
	}
	if n := len(MPSGPUs(res)); n > 1 {
		msg := fmt.Sprintf("MPS shares of %d GPUs: a process reaches one GPU's MPS daemon (CUDA_MPS_PIPE_DIRECTORY names the first); "+
			"run one process per GPU with the pairs in %s", n, EnvMPSPipeDirectories)
		tr.emit(&api.TaskEvent{Type: api.TaskSetup, DisplayMessage: msg, Details: map[string]string{"gpu_share_mode": api.ShareModeMPS}})
	}
}

// taskResources is the task's allocated resources (nil: none).
func taskResources(alloc *api.Allocation, task *api.Task) *api.AllocatedTaskResources {
	if alloc.AllocatedResources == nil {
		return nil
	}
	return alloc.AllocatedResources.Tasks[task.Name]
}
