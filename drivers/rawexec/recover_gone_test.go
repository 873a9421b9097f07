package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
	"github.com/drover/drover/internal/testproc"
)

// TestRecoverKillsUnsupervisedTask: the agent and the task's supervisor
// both die (SIGKILL) while the task runs on. The next agent cannot
// reattach (no supervisor, no exit status) and its restart policy will
// start a new copy, so recovery must also end the orphaned task: never
// two copies, one of them unwatched.
func TestRecoverKillsUnsupervisedTask(t *testing.T) {
	dir := t.TempDir()
	cfg := drivertest.NewTaskConfig(t, "orphaned", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "task.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(os.Args[0])
	agent.Env = append(os.Environ(), fakeAgentEnv+"="+cfgPath, "DROVER_FAKE_AGENT_BIN="+droverBin, "DROVER_FAKE_AGENT_DATA="+stateDir)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	agent.Stderr = &stderr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	var h drivers.TaskHandle
	if err := json.NewDecoder(out).Decode(&h); err != nil {
		_ = agent.Process.Kill()
		_ = agent.Wait()
		t.Fatalf("fake agent: %v: %s", err, stderr.String())
	}
	_ = agent.Process.Kill()
	_ = agent.Wait()
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(st.TaskPID, syscall.SIGKILL) })

	if err := syscall.Kill(st.ExecutorPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the supervisor: %v", err)
	}
	waitDead(t, st.ExecutorPID, "the supervisor")
	if !running(st.TaskPID) {
		t.Fatalf("task %d died with its supervisor; the orphan case needs it alive", st.TaskPID)
	}

	err = newDriver(t).RecoverTask(context.Background(), &h)
	if !errors.Is(err, drivers.ErrRecoverFailed) {
		t.Fatalf("RecoverTask without a supervisor = %v, want ErrRecoverFailed", err)
	}
	waitDead(t, st.TaskPID, "the unsupervised task")
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	testproc.Eventually(t, 30*time.Second, fmt.Sprintf("%s (pid %d) gone", what, pid), func() bool { return !running(pid) })
}
