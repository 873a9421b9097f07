// Package containerd is the "containerd" task driver: it runs each task as
// a container of a containerd daemon (1.6, 1.7 or 2.x) through the v1.7 Go
// client, with images pulled from a registry or imported from a local OCI
// archive ("oci-archive:///abs/path.tar", or a path inside the task or
// alloc dir such as "local/image.tar") and unpacked into the overlayfs
// snapshotter.
//
// It owns: the client config (plugin "containerd" { config { address,
// namespace, runtime, allow_privileged, allow_caps } }; CONTAINERD_ADDRESS
// overrides the default address, an explicit address wins), the task
// config schema (image, command, args, entrypoint, env, mounts, privileged,
// cap_add, cap_drop, readonly_rootfs, hostname, seccomp, seccomp_profile,
// host_network, auth { username password }, pids_limit, cpu_hard_limit),
// the OCI spec built from a TaskConfig, and the containers and snapshots of
// its daemon namespace (labelled drover.task_id). Leftovers reports
// containers there that the agent does not know; nothing is killed
// silently.
//
// Runtime choices:
//   - Sandbox: no_new_privs; the capability set DefaultCaps (Docker's
//     default without CAP_NET_RAW) as bounding, effective and permitted
//     set for root, and only as bounding set for any other user (no
//     effective, permitted, inheritable or ambient capabilities, as Docker
//     does); containerd's default seccomp profile (contrib/seccomp, an
//     allow-list, following the capabilities: denied syscalls fail with
//     EPERM); nosuid and nodev on every mount drover adds (alloc/,
//     local/, secrets/, the client's volumes, the config's mounts). The
//     task's secrets/ and what the client wrote there (the identity
//     token) become the container user's, 0700 (drivers.OwnSecrets).
//   - What a job can change: cap_drop (any), cap_add (only capabilities
//     in the client's allow_caps, by default DefaultAllowCaps, the
//     runtime default set with CAP_NET_RAW); privileged = true (all
//     capabilities, all host devices, no seccomp filter), seccomp = false
//     and seccomp_profile (a profile file on the host, which the job may
//     have written itself) only where the client sets allow_privileged;
//     host_network (the host's network namespace); mounts (binds of
//     absolute host paths or task dir paths, tmpfs; nosuid and nodev
//     forced); Task.User.
//   - Limits: cpu shares = the task's MHz; a CFS quota from reserved cores
//     or (cpu_hard_limit) MHz / the host's MHz per core; memory limit =
//     memory_max (or memory) with memory as the soft reservation; pids.
//     The task's cgroup is /drover/<container id> and is bound read-only
//     at /sys/fs/cgroup inside the task, so it can read its own limits.
//   - Network: an isolated namespace with loopback only, or the host's
//     (host_network = true, or any port assigned to the group). Port
//     mapping to a different "to" port needs a bridge this driver does not
//     build: such a task is refused with ErrInvalidConfig.
//   - Stop: the task is PID 1 of its pid namespace, and the kernel drops a
//     signal PID 1 has no handler for. StartTask returns once runc's init
//     has exec'd the task; StopTask resends the signal once PID 1 catches
//     it when the first one surely went unhandled (never twice), then
//     SIGKILLs after the timeout. Signal in ExitResult is set (code-128)
//     only when the driver signalled the task.
//   - OOM: read from the task cgroup's oom_kill counter at exit.
//   - GPUs: TaskConfig.Devices become device nodes (+ cgroup rules),
//     exactly the list the client built (a GPU's nodes and the NVIDIA
//     control devices); when a device of it is marked NVIDIA
//     (DeviceSpec.Vendor), the host's libnvidia-*/libcuda libraries and
//     nvidia-smi are mounted read-only.
//   - Events: OnEvent(func(Event)) receives task events (image import,
//     pull start, one per layer, pull done with duration, unpack) for the
//     client to turn into task events.
//
// Logs survive an agent restart through containerd's FIFOs: the shim
// writes the container's stdout/stderr into two FIFOs kept in the
// driver's data dir (DataDir/fifo/<container id>/; TaskDir/.containerd/
// without one). The shim holds its own read end open,
// so nothing is lost and the container never sees EPIPE while no agent
// reads; output waits in the pipe (and, once that is full, the writer
// blocks) until a restarted agent re-opens the same FIFOs in RecoverTask
// and resumes copying into the rotated files (drivers/logging), appending
// to the newest one (a task that exited meanwhile has its FIFOs drained
// without blocking). This was chosen over a per-task log supervisor
// process: no extra process per task, no drover binary to locate, and the
// shim already is the per-task survivor of an agent restart.
//
// Imports: drivers, drivers/logging, api and containerd's client
// packages; no other drover package.
//
// Concurrency: a Driver is safe for concurrent use. The daemon connection
// is opened lazily and shared (redialled after a failed Fingerprint). Each
// running task has one owner goroutine (started by StartTask or
// RecoverTask) that waits for the exit, drains the logs and publishes the
// ExitResult. A Driver recreated in the same process takes a task's FIFOs
// over from the previous instance, as a restarted agent would. Close stops
// the owner goroutines and waits for them without touching the containers.
package containerd
