// Package scheduler turns an evaluation into a plan. It is pure: Schedule
// reads an immutable State snapshot and returns a Result; it does no I/O,
// starts no goroutines and takes its clock and randomness from Options
// (node order is shuffled with a seed derived from the eval ID).
//
// Imports: api and the standard library (plus small pure libraries such as
// go-version). Never server/state, agent or drivers.
package scheduler
