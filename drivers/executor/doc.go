// Package executor owns the task supervisor: a small process, run as the
// hidden `drover executor <config.json>`, that outlives the agent. It
// starts the task (plainly for raw_exec; for exec in new PID, mount, IPC
// and UTS namespaces under a minimal read-only chroot, as an unprivileged
// user, inside a cgroup with CPU, memory, pids and device limits), copies
// stdout/stderr into rotated log files (drivers/logging), waits, and
// records exit code, signal and OOM kill atomically in an exit-status
// file.
//
// The driver side lives here too: Launch starts a supervisor detached,
// Reattach finds a running one again from persisted State (PIDs checked
// against their /proc start times), Process waits on it without polling
// (pidfd), signals, execs into and measures the task; Driver is the
// drivers.Driver shared by the exec and raw_exec packages.
//
// cgroups: v1 (also on hybrid hosts: /sys/fs/cgroup/<ctrl>/drover/<task>)
// or v2 (/sys/fs/cgroup/drover.slice/<task>.scope), chosen with
// cgroups.Mode(). On v2 the device allow-list (an eBPF program) is not
// applied: device nodes are still only those bind-mounted into the chroot.
//
// Exec tasks also get the default capability bounding set (DefaultCaps)
// and no_new_privs. ExecTask enters an exec task with util-linux nsenter
// (namespaces, chroot, user); its commands join the task cgroup through
// `drover executor --join <cgroup> [--user u] -- <path> <argv0> ...`.
//
// Memory: the supervisor is the whole drover binary; its private memory
// (RssAnon, about 3-5 MiB) is mostly package initialisation of the
// binary's dependencies. File pages of the binary are shared by all
// supervisors. GC is tuned low (SetGCPercent, SetMemoryLimit) and the
// start-up garbage is returned once the task runs.
//
// Imports: api, drivers, drivers/logging; never agent or server.
//
// Concurrency: the supervisor is one process per task; its goroutines
// (log copiers, signal forwarding) are owned and waited for by Main.
// Driver and Process are safe for concurrent use; each Process has one
// waiter goroutine, which ends when the supervisor exits or Close is called.
package executor
