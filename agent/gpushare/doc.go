// Package gpushare runs the NVIDIA MPS control daemons of a client's
// shared GPUs: one `nvidia-cuda-mps-control -d` per GPU that tasks share
// in MPS mode, seeing only that GPU (CUDA_VISIBLE_DEVICES), with its pipe
// and log directories under the client's data dir
// (<Dir>/<GPU UUID>/pipe and log). A daemon is started when the first
// task on its GPU acquires it and told to quit (`echo quit |
// nvidia-cuda-mps-control`, same env) when the last one releases it; a
// holder is one task, so acquiring twice counts once.
//
// Daemons outlive an agent restart, as the tasks using them do. A new
// Manager asks the GPU's daemon whether it answers
// (get_default_active_thread_percentage on its pipe directory) before it
// starts one, so a restored task's daemon is adopted, never doubled, and
// one that died is started again; Restore quits the daemons of GPUs no
// restored task holds any more (their tasks ended while the agent was
// down).
//
// The control program is looked up on PATH when a daemon is needed. Where
// it is missing, Acquire fails with ErrNoMPS and the task that asked for
// MPS fails: it never runs without the isolation it asked for.
//
// Directories: <Dir> and <Dir>/<GPU> are 0711 (not listable; the MPS
// server the daemon starts runs as the task's user and must reach its
// pipe directory), pipe/ is 0755, log/ 0700; each is created and opened
// without following symbolic links.
//
// Imports: the standard library and golang.org/x/sys/unix; no drover
// package.
//
// Concurrency: a Manager is safe for concurrent use. Commands for one GPU
// (probe, start, quit) run one at a time under that GPU's lock; nothing
// runs in the background (the daemons are processes of their own).
package gpushare
