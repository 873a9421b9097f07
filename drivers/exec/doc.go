// Package exec is the isolated process driver ("exec"): each task runs
// under a supervisor (drivers/executor) in new PID, mount, IPC and UTS
// namespaces, chrooted into a minimal read-only root (host /bin, /lib,
// /usr ... and parts of /etc, plus the task's /alloc, /local, /secrets,
// /tmp writable), as user nobody unless the task sets one, inside a
// cgroup with its CPU, memory, pids and device limits. Needs root, Linux
// and usable cgroups (v1, hybrid or v2); Fingerprint says why not.
//
// The sandbox (drivers/executor): every mount nosuid and nodev (a host
// setuid binary runs as the task's user), the default capability bounding
// set (executor.DefaultCaps, Docker's default without CAP_NET_RAW) and no
// other capabilities for a non-root user, no_new_privs, and containerd's
// default seccomp profile (an allow-list; denied syscalls fail with
// EPERM). secrets/ (0700) and the identity token in it (0600) belong to
// the task's user. Commands run by ExecTask (alloc exec) get the same.
//
// What a job can change (task config: command, args, pid_mode, ipc_mode;
// and Task.User): pid_mode = "host" / ipc_mode = "host" share the host's
// PID / IPC namespace (the task then sees, and as the same user may
// signal or trace, every host process of its user, including other
// tasks running as nobody); user picks any user but those of the client's
// user.denylist (default "root"; a root task still has only the default
// bounding set, no_new_privs and the filter). No option turns the
// seccomp filter, no_new_privs, the bounding set or nosuid off, and there
// is no privileged mode, cap_add or cap_drop.
//
// Imports: api, drivers, drivers/executor.
//
// Concurrency: the Driver is safe for concurrent use.
package exec
