package supervisor

import (
	"fmt"
	"os"
	"runtime/debug"
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
)

// self is what follows this binary's path to run it as a supervisor
// again (the namespace init): ["executor"] in drover, none in
// drover-executor. Set once by Main before anything else runs.
var self []string

// Main runs the supervisor with args (after the program name and sub):
// `<config.json>` supervises a task, `--init <config.json>` is the exec
// driver's namespace init, `--join ...` see JoinFlag. sub is what this
// binary needs before those args to run as a supervisor: ["executor"]
// for `drover executor`, nothing for drover-executor. It returns the
// process exit code. There is no context on purpose: the supervisor
// outlives the agent and ends only with its task.
func Main(sub []string, args []string) int {
	self = sub
	switch {
	case len(args) == 2 && args[0] == initFlag:
		lowGC()
		return runInit(args[1])
	case len(args) >= 2 && args[0] == JoinFlag:
		return joinAndExec(args[1:])
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

// lowGC tunes the garbage collector of a long-lived supervisor, which must
// stay small. The supervisor calls it once its task runs (see run): a low
// GOGC or memory limit while the binary initialises and starts the task
// only adds collections (and CPU) to every task start.
func lowGC() {
	debug.SetGCPercent(25)
	debug.SetMemoryLimit(4 << 20)
}
