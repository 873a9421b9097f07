package drivertest

import (
	"testing"
	"time"

	"github.com/drover/drover/drivers"
)

// Harness describes a driver under test. Every func returning a task's
// driver config (the job's `config { ... }` block) may be nil when the
// driver cannot express it; the subtests that need it are then skipped
// with a note (the suite says which).
type Harness struct {
	// New builds a fresh driver instance. It is called once per subtest
	// and again for the reattach test (a "restarted agent").
	New func(t *testing.T) drivers.Driver

	// PrintLine: print line (plus newline) on stdout, then exit 0.
	PrintLine func(line string) map[string]any
	// PrintStderr: print line on stderr, then exit 0 (optional).
	PrintStderr func(line string) map[string]any
	// Exit: exit with code at once.
	Exit func(code int) map[string]any
	// Sleep: wait d, then exit with code. SIGTERM ends it promptly.
	Sleep func(d time.Duration, code int) map[string]any
	// IgnoreTERM: run for a long time and ignore SIGTERM (print "ready"
	// on stdout once the signal is ignored).
	IgnoreTERM func() map[string]any
	// UseMemory: allocate and touch mb megabytes, then sleep.
	UseMemory func(mb int) map[string]any
	// PrintMemoryLimit: print the task's memory limit in bytes (as the task
	// can read it, e.g. from its cgroup) on stdout, then exit 0.
	PrintMemoryLimit func() map[string]any
	// TrapSignal: print "ready" once a handler for signal (e.g. "SIGUSR1")
	// is installed; on the signal print line and exit 0.
	TrapSignal func(signal, line string) map[string]any
	// ExecEcho is the ExecTask command that prints line on stdout; nil
	// when the driver is no Execer.
	ExecEcho func(line string) []string
	// ExecExit is the ExecTask command that exits with code (optional).
	ExecExit func(code int) []string

	// EnforcesMemory: the driver applies MemoryMB as a limit, so the OOM
	// and MemoryLimitVisible subtests apply (with UseMemory /
	// PrintMemoryLimit).
	EnforcesMemory bool
	// KilledSignal is the signal number reported when a task is killed
	// with SIGKILL; 0 means "only check the task did not succeed".
	KilledSignal int
	// Prepare adjusts each TaskConfig before start (user, resources...).
	Prepare func(t *testing.T, cfg *drivers.TaskConfig)
	// Timeout bounds every wait of the suite (default 30 s; VMs more).
	Timeout time.Duration
	// Parallel runs the subtests in parallel.
	Parallel bool
	// InvalidConfigs must all fail ValidateConfig with ErrInvalidConfig.
	InvalidConfigs []map[string]any
}

func (h *Harness) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 30 * time.Second
}
