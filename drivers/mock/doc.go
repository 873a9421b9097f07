// Package mock is a configurable fake driver ("mock_driver") for task
// runner and client tests: no process is started, tasks are goroutines
// that write their configured output into the real rotated log files
// (drivers/logging) and exit after run_for with exit_code / exit_signal.
// Config keys: run_for, exit_code, exit_signal, exit_err_msg, oom_killed,
// start_error, start_block_for, kill_after, stdout_string, stdout_repeat,
// stdout_repeat_duration, signal_error. A recreated driver recovers tasks
// from their handles (remaining run time computed from the start time).
//
// Imports: api, drivers, drivers/logging.
//
// Concurrency: the Driver is safe for concurrent use; each task has one
// goroutine, ended by its exit, StopTask or DestroyTask and waited for.
package mock
