// Package containerd is the "containerd" task driver: it runs each task as
// a container of a containerd daemon (1.6, 1.7 or 2.x) through the v1.7 Go
// client, with images pulled from a registry or imported from a local OCI
// archive ("oci-archive:///path.tar", or a path inside the alloc dir) and
// unpacked into the overlayfs snapshotter.
//
// It owns: the client config (plugin "containerd" { config { address,
// namespace, allow_privileged, allow_caps, ... } }, CONTAINERD_ADDRESS
// overrides the default address), the task config schema (image, command,
// args, entrypoint, env, mounts, privileged, cap_add/cap_drop,
// readonly_rootfs, hostname, seccomp, host_network, auth, pids_limit,
// cpu_hard_limit), the OCI spec built from a TaskConfig, and the
// containers and snapshots of the daemon namespace it is configured with
// (labelled drover.task_id). Leftovers reports containers of that
// namespace the agent does not know; nothing is killed silently.
//
// Logs survive an agent restart through containerd's FIFOs: the shim
// writes the container's stdout/stderr into two FIFOs kept in the task
// directory (TaskDir/.containerd/). The shim holds its own read end open,
// so nothing is lost and the container never sees EPIPE while no agent
// reads; output waits in the pipe (and, once that is full, the writer
// blocks) until a restarted agent re-opens the same FIFOs in RecoverTask
// and resumes copying into the rotated files (drivers/logging), appending
// to the newest one. This was chosen over a per-task log supervisor
// process: no extra process per task, no drover binary to find, and the
// shim is already the per-task survivor of an agent restart.
//
// Imports: drivers, drivers/logging, api, and containerd's client
// packages; no other drover package.
//
// Concurrency: a Driver is safe for concurrent use. The daemon connection
// is opened lazily and shared; each running task has one owner goroutine
// (started by StartTask or RecoverTask) that waits for the exit, drains
// the logs and publishes the ExitResult; a recreated Driver in the same
// process takes over a task's FIFOs from the previous instance (as a
// restarted agent would). Close stops the owner goroutines without
// touching the containers.
package containerd
