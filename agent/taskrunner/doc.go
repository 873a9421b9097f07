// Package taskrunner runs one task of an allocation through its driver:
// it builds the task's environment (DROVER_* and NOMAD_* variables, GPU
// visibility, a gang member's DROVER_GANG_* and torch.distributed
// MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK, which the job's env overrides),
// hands the driver the device nodes of its GPUs (the paths the node's
// fingerprint gives each allocated instance, plus the NVIDIA control
// devices), gives a task holding GPU shares its share (DROVER_GPU_SHARE,
// DROVER_GPU_MEMORY_LIMIT) and, in MPS mode, its GPUs' MPS daemons
// (held through MPSDaemons from setup until the task is dead; their pipe
// directories mounted at /run/nvidia-mps/<uuid> for drivers that mount
// the task dirs) and CUDA_MPS_* limits (gpushare.go), interpolates ${...} in driver config and env, fetches
// http(s) artifacts and the dispatch payload, renders templates, starts
// the task (or reattaches to it after an agent
// restart), waits for it, applies the restart policy, kills it with the
// task's kill signal and timeout, and records task events and state.
// A task keeps its last MaxEvents (10, as Nomad) events; a run of "Driver"
// messages of one kind (image progress: "pulling layer ...") is kept as
// one event, the latest, with Details["coalesced_count"], so progress
// never pushes "Received" and "Task Setup" out.
//
// Imports: api, drivers, agent/clientstate, internal/clock. Never server.
//
// Concurrency: a TaskRunner is driven by one goroutine, Run, owned and
// waited for by the alloc runner. Kill, Restart, Signal, State and
// WaitCh are safe to call from any goroutine. Time comes from an injected
// clock (internal/clock) so restart delays are tested without sleeping.
package taskrunner
