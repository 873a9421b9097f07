// Package testproc is what tests need to run other processes: the drover
// binary built once per test process (Binary, DroverBinary,
// MainWithBinary; $DROVER_TEST_BIN when set), free ports for their
// command lines (FreePort), Process (StartProcess: a process with its
// output kept, Stop/Kill/Restart/WaitFor, ended by the test's cleanup),
// Descendants and Reap (the task supervisors and tasks an agent leaves
// running, killed by agent tests' cleanups), and Eventually, the one poll
// with a deadline of drover's tests.
//
// Eventually is for what has no signal to wait on: another process, its
// HTTP server or the files it writes, a test fake's counters. An
// in-process server has signals (Ready, LeaderChanged, BrokerIdle, state
// watches: see internal/testcluster), a fake clock has WaitPending; wait
// on those instead.
//
// Test-only: only _test.go files and the test helper packages
// (drivers/drivertest, internal/testcluster) import it (layout_test.go).
// Imports: the standard library only, so every package's tests can use it
// without an import cycle.
//
// Concurrency: FreePort and Binary are safe for concurrent use; a Process
// is driven by its test's goroutine.
package testproc
