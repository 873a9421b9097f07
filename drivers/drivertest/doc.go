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
// CI=true fail"; DroverBinary gives $DROVER_TEST_BIN or builds drover
// once (TestMain); ShellHarness fills a Harness for {command, args}
// drivers with /bin/sh tasks; SandboxProbe builds a small static program
// (testdata/probe, also setuid root) that checks a task's sandbox from
// inside, StatusFields and MountOptions parse /proc/<pid>/status and
// mountinfo.
//
// Shared by every test that runs the real binary (drivers, agent e2e and
// benchmarks, the ui browser test; layout_test.go lets ui's tests import
// this package): Binary (DroverBinary once per test process), FreePort,
// and Process (StartProcess: a `drover ...` process with its output kept,
// Stop/Kill/Restart/WaitFor, ended by the test's cleanup).
//
// What the suite expects beyond the Driver doc comments: a second
// WaitTask yields the same result; StopTask on an exited task is no
// error; DestroyTask(force=false) of a running task fails; RecoverTask of
// a known task is a no-op and of undecodable DriverState wraps
// drivers.ErrRecoverFailed; unknown task IDs wrap drivers.ErrTaskNotFound.
//
// Imports: drivers, drivers/logging and api only.
//
// Concurrency: subtests may run in parallel (Harness.Parallel); each gets
// its own alloc dir and task ID.
package drivertest
