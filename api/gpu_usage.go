package api

import "time"

// GPUUsage is what an alloc's GPUs do, as its client measures them (NVML
// on real GPUs; simulated on -dev-gpus and drover sim nodes, where a
// task's env DROVER_SIM_GPU_UTIL sets the utilization, default 100). The
// client sends it with its alloc updates only when the alloc turns idle
// or busy, or the figures move by more than a few points (at most once a
// sampling interval), so samples are not Raft writes.
type GPUUsage struct {
	// GPUs is how many GPU instances the alloc holds.
	GPUs int `json:"GPUs"`
	// UtilPercent is the mean utilization over those GPUs (0-100).
	UtilPercent float64 `json:"UtilPercent"`
	// MemoryUsedMiB is the GPU memory in use on those GPUs.
	MemoryUsedMiB int64 `json:"MemoryUsedMiB"`
	// IdleSince is when utilization fell under GPUIdleUtilPercent (unix
	// ns); 0 while the GPUs are busy.
	IdleSince int64 `json:"IdleSince,omitempty"`
	// SampledAt is when the figures were read (unix ns).
	SampledAt int64 `json:"SampledAt"`
	// Simulated: the figures come from the GPU simulator.
	Simulated bool `json:"Simulated,omitempty"`
}

// GPUIdleUtilPercent is the utilization under which an alloc's GPUs count
// as idle.
const GPUIdleUtilPercent = 1.0

// IdleFor is how long the GPUs have been idle at now (0 when busy).
func (u *GPUUsage) IdleFor(now time.Time) time.Duration {
	if u == nil || u.IdleSince == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, u.IdleSince)), 0)
}

// Idle actions of a queue (Queue.IdleAction): what happens to an alloc
// whose GPUs stay idle for its idle_timeout.
const (
	IdleActionFlag    = "flag"    // shown in job status and the UI (default)
	IdleActionStop    = "stop"    // stopped with the reason IdleReclaimDescription
	IdleActionPreempt = "preempt" // stopped so, only when pending work needs GPUs
)

// IdleReclaimDescription is the desired description of an alloc stopped
// for holding idle GPUs.
const IdleReclaimDescription = "idle GPU reclaim"

// SimGPUUtilEnv is the task env variable that sets a simulated GPU's
// utilization (percent) for the alloc's GPUs on simulated nodes.
const SimGPUUtilEnv = "DROVER_SIM_GPU_UTIL"

// IdleTimeout is the idle_timeout of group tg of job: the group's, else
// the job's, else its queue's (q, may be nil); 0: none.
func IdleTimeout(job *Job, tg *TaskGroup, q *Queue) time.Duration {
	switch {
	case tg != nil && tg.IdleTimeout > 0:
		return tg.IdleTimeout
	case job != nil && job.IdleTimeout > 0:
		return job.IdleTimeout
	case q != nil:
		return q.IdleTimeout
	}
	return 0
}

// GPUIdle reports whether a live alloc has held idle GPUs for at least
// timeout at now (never with timeout 0), and for how long.
func (a *Allocation) GPUIdle(timeout time.Duration, now time.Time) (time.Duration, bool) {
	if a == nil || timeout <= 0 || a.TerminalStatus() {
		return 0, false
	}
	d := a.GPUUsage.IdleFor(now)
	return d, a.GPUUsage != nil && a.GPUUsage.IdleSince != 0 && d >= timeout
}

// EvalTriggerIdleReclaim is the trigger of the evals that stop allocs
// holding idle GPUs (Evaluation.StopAllocs) where their queue's
// idle_action is stop.
const EvalTriggerIdleReclaim = "idle-gpu-reclaim"

// MinRuntimeOf is the min_runtime of the job's group: the group's, else
// the job's.
func (j *Job) MinRuntimeOf(group string) time.Duration {
	if tg := j.LookupTaskGroup(group); tg != nil && tg.MinRuntime > 0 {
		return tg.MinRuntime
	}
	return j.MinRuntime
}
