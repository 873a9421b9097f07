package executor

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// Modes of the executor command.
const (
	// initFlag runs the namespace init (PID 1 of an exec task).
	initFlag = "--init"
	// joinFlag: `--join <cgroup> [--user <user>] -- <path> <argv0> <args...>`
	// moves itself into a task cgroup, becomes user and execs path
	// (ExecTask's commands).
	joinFlag = "--join"
)

// Main runs the supervisor: `drover executor <config.json>`; the exec
// driver's namespace init is `drover executor --init <config.json>`.
// It returns the process exit code. ctx is ignored on purpose: the
// supervisor outlives the agent and ends only with its task.
func Main(_ context.Context, args []string) int {
	switch {
	case len(args) == 2 && args[0] == initFlag:
		lowGC()
		return runInit(args[1])
	case len(args) >= 2 && args[0] == joinFlag:
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

// joinAndExec implements --join (see joinFlag).
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
		cred, err := lookupUser(user)
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
