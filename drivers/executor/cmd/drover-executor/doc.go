// Command drover-executor is the per-task supervisor of the exec, raw_exec
// and qemu drivers as a small binary of its own: it links only the
// supervisor (drivers/executor/supervisor: the standard library,
// golang.org/x/sys and drivers/logging), so each of the many supervisors a
// client runs costs far less private memory than the whole drover binary
// would (`drover executor`, the fallback when this binary is absent).
//
// Usage (by the drivers, not by people):
//
//	drover-executor <config.json>
//	drover-executor --init <config.json>
//	drover-executor --join <cgroup> [--user <user>] -- <path> <argv0> [args...]
//	drover-executor --sandbox <uid>:<gid>[:<gids>] <filter> -- <command> [args...]
//	drover-executor --protocol   (prints the driver contract it speaks)
//
// A leading "executor" argument is accepted and ignored, so the binary
// also works where `drover executor ...` is expected.
//
// It imports only drivers/executor/supervisor (a test there keeps the
// binary's dependencies to the standard library, golang.org/x/sys and
// drivers/logging). Concurrency: see package supervisor.
package main
