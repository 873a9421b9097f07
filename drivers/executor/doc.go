// Package executor is the driver side of the task supervisor that exec,
// raw_exec and qemu share: Launch starts a supervisor detached, Reattach
// finds a running one again from persisted State (PIDs checked against
// their /proc start times), Process waits on it without polling (pidfd),
// signals, execs into and measures the task; Supervised is the task
// table of the drivers whose tasks run under a supervisor, with their
// WaitTask, TaskStats and DestroyTask; Driver is the drivers.Driver of
// the exec and raw_exec packages.
//
// The supervisor itself lives in package supervisor (task start, chroot,
// cgroup limits, logs, exit status) so that it can be the small binary
// drover-executor (drivers/executor/cmd/drover-executor), which links
// only the standard library, golang.org/x/sys and drivers/logging.
// FindSupervisor picks what Launch runs: the executor_path itself when it
// is a drover-executor, else drover-executor next to the drover binary
// (executor_path or os.Executable()) if it prints this build's
// supervisor.Protocol (checked once per binary: a helper left from
// another version is not used), else `drover executor` (the hidden
// subcommand of the whole binary, so that `go build` alone still gives a
// complete drover). Memory of 100 raw_exec supervisors (BenchmarkRawExec100):
// 0.78 MB PSS / 2.85 MB RSS each with drover-executor (a trivial Go
// program is ~0.67 MB private), 4 MB PSS / 21 MB RSS with `drover executor`.
//
// Exec tasks run sandboxed (see package supervisor): nosuid,nodev
// mounts, the DefaultCaps bounding set and nothing inheritable or
// ambient, no_new_privs, and a seccomp filter: containerd's default
// profile (contrib/seccomp, an allow-list, computed for DefaultCaps) that
// CompileSeccomp turns into classic BPF for this host's architecture
// (amd64 and arm64; syscalls of another ABI kill the task; elsewhere the
// exec driver starts nothing). A denied syscall fails with EPERM. The
// task's secrets/ becomes its user's (drivers.OwnSecrets), as for a
// raw_exec task with a user. ExecTask enters an exec task with util-linux
// nsenter (namespaces, chroot, the task's network namespace), which runs
// the supervisor binary (handed over open: the chroot lacks it) as
// `--sandbox`: the command gets the task's user and sandbox, and the
// environment of the task, while nsenter and the helpers before it run
// with a clean one. Its commands join the task cgroup through the
// supervisor's `--join <cgroup> [--user u] -- <path> <argv0> ...`.
//
// Imports: api, drivers, drivers/logging, drivers/executor/supervisor,
// containerd's contrib/seccomp (the profile) and the OCI runtime spec;
// never agent or server.
//
// Concurrency: Driver and Process are safe for concurrent use; each
// Process has one waiter goroutine, which ends when the supervisor exits
// or Close is called.
package executor
