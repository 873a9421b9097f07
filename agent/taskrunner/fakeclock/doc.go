// Package fakeclock is a manually advanced clock (taskrunner.Clock) for
// runner and client tests: timers fire only when Advance passes them, and
// Waiters/NextIn let a test see what a runner waits for, so restart
// delays and heartbeats are tested without sleeping.
//
// Imports: standard library only.
//
// Concurrency: a Clock is safe for concurrent use.
package fakeclock
