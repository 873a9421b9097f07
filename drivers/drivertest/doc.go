// Package drivertest is the driver conformance suite: Run(t, h) exercises
// a real driver (exec, raw_exec, containerd, qemu, mock) through the
// drivers.Driver contract against its real runtime — start, logs, exit
// codes, stop with kill timeout, OOM, limits, exec, stats, signals and
// reattach after the driver is recreated. A Harness says how to build the
// driver and which task config makes the task print, exit, sleep or use
// memory, so each runtime plugs in its own commands.
//
// Helpers: NewTaskConfig lays out an alloc dir like the client does;
// NeedRoot / Need / NeedBinary apply the rule "outside CI skip, under
// CI=true fail"; ShellHarness fills a Harness for {command, args}
// drivers with /bin/sh tasks; SandboxProbe builds a small static program
// (testdata/probe, also setuid root) that checks a task's sandbox from
// inside, StatusFields and MountOptions parse /proc/<pid>/status and
// mountinfo. The drover binary the executor-based drivers need, ports and
// processes come from internal/testproc.
//
// What the suite expects beyond the Driver doc comments: a second
// WaitTask yields the same result; StopTask on an exited task is no
// error; DestroyTask(force=false) of a running task fails; RecoverTask of
// a known task is a no-op and of undecodable DriverState wraps
// drivers.ErrRecoverFailed; unknown task IDs wrap drivers.ErrTaskNotFound.
//
// Imports: drivers, drivers/logging, api and internal/testproc only.
//
// Concurrency: subtests may run in parallel (Harness.Parallel); each gets
// its own alloc dir and task ID.
package drivertest
