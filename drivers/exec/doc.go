// Package exec is the isolated process driver ("exec"): each task runs
// under a supervisor (drivers/executor) in new PID, mount, IPC and UTS
// namespaces, chrooted into a minimal read-only root (host /bin, /lib,
// /usr ... and parts of /etc, plus the task's /alloc, /local, /secrets,
// /tmp writable), as user nobody unless the task sets one, inside a
// cgroup with its CPU, memory, pids and device limits. Needs root, Linux
// and usable cgroups (v1, hybrid or v2); Fingerprint says why not.
//
// Imports: api, drivers, drivers/executor.
//
// Concurrency: the Driver is safe for concurrent use.
package exec
