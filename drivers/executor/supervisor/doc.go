// Package supervisor is the per-task supervisor: a small process that
// outlives the agent, run as drover-executor <config.json> (or `drover
// executor <config.json>` where that binary is absent). It starts the
// task (plainly for raw_exec and qemu; for exec in new PID, mount, IPC and
// UTS namespaces under a minimal read-only chroot, as an unprivileged
// user, with the sandbox of sandbox.go), inside a cgroup with CPU,
// memory, pids and device limits, copies
// stdout/stderr into rotated log files (drivers/logging), waits, and
// records exit code, signal and OOM kill atomically in an exit-status
// file (Result). The driver side is package executor.
//
// The exec sandbox: every mount of the chroot is nosuid and nodev (device
// nodes, bound one by one under /dev, nosuid and noexec), read-only but
// for alloc/, local/, secrets/, tmp/ and writable volumes; the task gets
// the DefaultCaps bounding set, no inheritable or ambient capabilities,
// no_new_privs and the seccomp program the driver computed
// (Isolation.Seccomp, classic BPF: this package knows no syscall names,
// and the init starts no task without one), all set on the thread that
// forks it (the filter on every thread, TSYNC). The namespace init, whose
// PID the driver reports as the task's, then keeps no more than its task
// (same bounding set and filter, no_new_privs, of its own capabilities
// only CAP_KILL). `--sandbox` gives a command exec'd into the task (by
// util-linux nsenter, see package executor) the same.
//
// cgroups: v1 (also on hybrid hosts: /sys/fs/cgroup/<ctrl>/drover/<task>)
// or v2 (/sys/fs/cgroup/drover.slice/<task>.scope). Limits are plain file
// writes (memory.limit_in_bytes/memory.max, cpu.shares/cpu.weight,
// cpu.cfs_quota_us/cpu.max, cpuset.cpus, pids.max, devices.deny/allow,
// cgroup.procs), no cgroup library: on v2 the device allow-list (an eBPF
// program) is not applied; device nodes are still only those
// bind-mounted into the chroot.
//
// Memory: every running task has one supervisor, so this package must stay
// light: it imports only the standard library, golang.org/x/sys and
// drivers/logging (never api, drivers, agent, server or any library with
// heavy package initialisation; check `go list -deps` of
// drivers/executor/cmd/drover-executor). GC is tuned low (SetGCPercent,
// SetMemoryLimit) once the task runs and the start-up garbage returned.
// The config and the reports go through the package's own small JSON
// codec (json.go, codec.go), not encoding/json: BenchmarkSupervisorJSON
// (`make bench`) builds drover-executor both ways (-tags
// supervisor_stdjson for encoding/json, codec_stdjson.go) and runs 20
// supervisors of each over a sleeping task. On the 2-core development VM
// on 2026-12-07 (3 runs) the own codec's binary was 2,176 KB against
// 2,500 KB, and a running supervisor held 999 KB Pss (896 KB private)
// against 1,060 KB (936 KB). Tests hold both codecs to encoding/json.
//
// Concurrency: one process per task; Main runs single-threaded apart from
// its goroutines (log copiers, signal forwarding in the init), which it
// owns and waits for.
package supervisor
