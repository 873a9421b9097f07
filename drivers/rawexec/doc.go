// Package rawexec is the unisolated process driver ("raw_exec"): the task
// runs as the agent's user (or Task.User) in its task dir, under the same
// supervisor as exec (logs, exit status, reattach after an agent
// restart), in a limit-free cgroup when the agent is root (for stats and
// clean kills). Whether it is enabled is the client's decision (plugin
// config or dev mode); the driver itself always fingerprints healthy.
// There is no sandbox (no namespaces, capabilities or seccomp filter of
// its own): a task has what its user has. With Task.User, secrets/ and
// the identity token become that user's (drivers.OwnSecrets).
//
// Imports: api, drivers, drivers/executor.
//
// Concurrency: the Driver is safe for concurrent use.
package rawexec
