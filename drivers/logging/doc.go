// Package logging owns the rotating log writer that task drivers (and the
// task supervisor) use for a task's stdout and stderr: files
// Dir/<task>.stdout.0, .1, ... rotated at a size limit, the oldest deleted
// beyond MaxFiles, appending to the newest file again after a restart.
//
// Security: the task owns Dir and may plant links in it. Dir is opened once
// with O_NOFOLLOW and every file relative to that fd with O_NOFOLLOW and
// O_NONBLOCK; a symlink, FIFO or hard link found where a log file goes is
// replaced by a fresh file (O_EXCL), so output is never written outside Dir.
// ReadAll refuses links too.
//
// Imports: standard library only (no drover package).
//
// Concurrency: a Writer is safe for concurrent use; Write calls are
// serialised. Two Writers must not share one file prefix.
package logging
