// Package logging owns the rotating log writer that task drivers (and the
// task supervisor) use for a task's stdout and stderr: files
// Dir/<task>.stdout.0, .1, ... rotated at a size limit, the oldest deleted
// beyond MaxFiles, appending to the newest file again after a restart.
//
// Imports: standard library only (no drover package).
//
// Concurrency: a Writer is safe for concurrent use; Write calls are
// serialised. Two Writers must not share one file prefix.
package logging
