// Package drivertest is the driver conformance suite: Run(t, h) exercises
// a real driver (exec, raw_exec, containerd, qemu, mock) through the
// drivers.Driver contract against its real runtime — start, logs, exit
// codes, stop with kill timeout, OOM, limits, exec, stats, signals and
// reattach after the driver is recreated. A Harness says how to build the
// driver and which task config makes the task print, exit, sleep or use
// memory, so each runtime plugs in its own commands.
//
// Helpers: NewTaskConfig lays out an alloc dir like the client does;
// NeedRoot / Need apply the rule "outside CI skip, under CI=true fail".
//
// Imports: drivers, drivers/logging and api only.
//
// Concurrency: subtests may run in parallel (Harness.Parallel); each gets
// its own alloc dir and task ID.
package drivertest
