package supervisor

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
)

// Modes of the executor command.
const (
	// initFlag runs the namespace init (PID 1 of an exec task).
	initFlag = "--init"
	// JoinFlag: `--join <cgroup> [--user <user>] -- <path> <argv0> <args...>`
	// moves itself into a task cgroup, becomes user and execs path
	// (ExecTask's commands).
	JoinFlag = "--join"
	// protocolFlag prints Protocol.
	protocolFlag = "--protocol"
)

// Protocol names the contract between the drivers and the supervisor
// binary (Config and Result, the start pipe, the flags). Change it with
// any change a supervisor of the other version would misread or ignore:
// the drivers use a drover-executor only when it prints the same
// (`drover-executor --protocol`), else `drover executor`.
const Protocol = "drover-executor/2"

// self is what follows this binary's path to run it as a supervisor
// again (the namespace init): ["executor"] in drover, none in
// drover-executor. Set once by Main before anything else runs.
var self []string

// Main runs the supervisor with args (after the program name and sub):
// `<config.json>` supervises a task, `--init <config.json>` is the exec
// driver's namespace init, `--join ...` see JoinFlag, `--sandbox ...` see
// SandboxFlag. sub is what this
// binary needs before those args to run as a supervisor: ["executor"]
// for `drover executor`, nothing for drover-executor. It returns the
// process exit code. There is no context on purpose: the supervisor
// outlives the agent and ends only with its task.
func Main(sub []string, args []string) int {
	self = sub
	// No heap profile is ever taken of a supervisor: its sampling would
	// only add the profiler's tables to every one.
	runtime.MemProfileRate = 0
	switch {
	case len(args) == 2 && args[0] == initFlag:
		return runInit(args[1])
	case len(args) == 1 && args[0] == protocolFlag:
		fmt.Println(Protocol)
		return 0
	case len(args) >= 2 && args[0] == JoinFlag:
		return joinAndExec(args[1:])
	case len(args) >= 1 && args[0] == SandboxFlag:
		return sandboxAndExec(args[1:])
	case len(args) == 1:
		if err := supervise(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, "executor:", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintln(os.Stderr, "usage: drover executor <config.json>")
		return 2
	}
}

// joinAndExec implements --join (see JoinFlag).
func joinAndExec(args []string) int {
	name, user := args[0], ""
	args = args[1:]
	if len(args) >= 2 && args[0] == "--user" {
		user, args = args[1], args[2:]
	}
	if len(args) < 3 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: drover executor --join <cgroup> [--user <user>] -- <path> <argv0> [args...]")
		return 2
	}
	if err := joinCgroup(name, os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		return 126
	}
	if user != "" {
		cred, err := LookupUser(user)
		if err == nil {
			err = dropTo(cred)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "executor:", err)
			return 126
		}
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "executor: exec %s: %v\n", args[1], err)
	return 127
}

// gcHeadroom is how far a running supervisor's memory may grow before
// the garbage collector runs.
const gcHeadroom = 2 << 20

// lowGC tunes the garbage collector of a long-lived supervisor, which must
// stay small; the supervisor (and the namespace init) call it once the
// task runs. From then on a supervisor allocates almost nothing (the log
// copiers reuse their buffers; a log rotation makes a few KB of garbage),
// while a collection would cost more memory than it frees: the first one
// alone adds its mark workers, work buffers and metadata (measured: +230
// KB resident per supervisor). So GOGC is off and a memory limit of the
// current footprint plus gcHeadroom starts a collection only if garbage
// ever adds up; the runtime's forced GC every 2 minutes is off with GOGC.
// As `drover executor` (the whole binary) the start-up leaves megabytes
// of package-initialisation garbage: that one collection pays and is
// forced here.
func lowGC() {
	if self != nil {
		debug.FreeOSMemory()
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var mapped int64
	if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
		mapped = int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	}
	debug.SetMemoryLimit(mapped + gcHeadroom)
	debug.SetGCPercent(-1)
}
