package executor

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
)

// Modes of the executor command.
const (
	// initFlag runs the namespace init (PID 1 of an exec task).
	initFlag = "--init"
)

// Main runs the supervisor: `drover executor <config.json>`; the exec
// driver's namespace init is `drover executor --init <config.json>`.
// It returns the process exit code. ctx is ignored on purpose: the
// supervisor outlives the agent and ends only with its task.
func Main(_ context.Context, args []string) int {
	// The supervisor is long-lived and must stay small.
	debug.SetGCPercent(25)
	debug.SetMemoryLimit(4 << 20)
	switch {
	case len(args) == 2 && args[0] == initFlag:
		return runInit(args[1])
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
