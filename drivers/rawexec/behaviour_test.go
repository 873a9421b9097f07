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

	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/internal/testproc"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
)

func startTask(t *testing.T, d drivers.Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.StartTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	return h
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := <-ch
	if !ok {
		t.Fatalf("task %s did not exit in 30s", id)
	}
	return r
}

// TestExecutorMemory measures the supervisor's resident memory.
func TestExecutorMemory(t *testing.T) {
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "idle", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	h := startTask(t, d, cfg)
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	rss, anon, err := executor.Memory(st.ExecutorPID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("executor memory: RSS %.1f MiB, private (RssAnon) %.1f MiB", float64(rss)/(1<<20), float64(anon)/(1<<20))
	if anon == 0 || anon > rss {
		t.Errorf("executor memory: anon %d, rss %d", anon, rss)
	}
}

// fakeAgentEnv makes the test binary act as an agent that starts the
// task in $DROVER_FAKE_AGENT (a TaskConfig JSON), prints the handle and
// then waits to be killed.
const fakeAgentEnv = "DROVER_FAKE_AGENT"

func fakeAgent() int {
	b, err := os.ReadFile(os.Getenv(fakeAgentEnv))
	if err != nil {
		return 1
	}
	var cfg drivers.TaskConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return 1
	}
	d, err := New(drivers.Options{Config: map[string]any{"executor_path": os.Getenv("DROVER_FAKE_AGENT_BIN")}, DataDir: os.Getenv("DROVER_FAKE_AGENT_DATA")})
	if err != nil {
		return 1
	}
	h, err := d.StartTask(context.Background(), &cfg)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	select {} // until SIGKILL
}

// TestTaskOutlivesAgent: an agent process starts a task and is killed
// with SIGKILL; the task keeps running and logging, and a new agent
// recovers it and gets its exit code.
func TestTaskOutlivesAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := drivertest.NewTaskConfig(t, "orphan", map[string]any{"command": "/bin/sh",
		"args": []any{"-c", `read line < "$0"; echo "after agent: $line"; exit 4`, filepath.Join(dir, "fifo")}})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
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
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()

	// The agent is dead; the task still waits on the fifo. Release it.
	if err := os.WriteFile(filepath.Join(dir, "fifo"), []byte("released\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t)
	if err := d.RecoverTask(context.Background(), &h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	if res := waitExit(t, d, cfg.ID); res.ExitCode != 4 {
		t.Fatalf("exit = %+v, want 4", res)
	}
	logs, _ := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
	if !strings.Contains(string(logs), "after agent: released") {
		t.Errorf("stdout = %q, want the line written after the agent died", logs)
	}
}

// TestRecoverRejectsReusedPID: a handle whose supervisor PID now belongs
// to another process (start time differs) is not recovered.
func TestRecoverRejectsReusedPID(t *testing.T) {
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "reuse", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	h := startTask(t, d, cfg)
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	st.ExecutorStart++
	bad := *h
	bad.Config = &drivers.TaskConfig{}
	*bad.Config = *cfg
	bad.Config.ID += "-copy"
	var err error
	if bad.DriverState, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := newDriver(t).RecoverTask(context.Background(), &bad); !errors.Is(err, drivers.ErrRecoverFailed) {
		t.Errorf("RecoverTask with a reused PID = %v, want ErrRecoverFailed", err)
	}
}

// TestLogRotation: output beyond the size limit rotates; old files go.
func TestLogRotation(t *testing.T) {
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "chatty", map[string]any{"command": "/bin/sh",
		"args": []any{"-c", `head -c 3145728 /dev/zero | tr '\0' a`}})
	cfg.LogMaxFiles, cfg.LogMaxFileSizeMB = 2, 1
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("exit = %+v", res)
	}
	idx, err := logging.Indexes(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) != 2 || idx[0] != 1 || idx[1] != 2 {
		t.Fatalf("log indexes = %v, want [1 2]", idx)
	}
	for _, i := range idx {
		st, err := os.Stat(filepath.Join(cfg.LogDir, logging.FileName(cfg.Name, "stdout", i)))
		if err != nil || st.Size() != 1<<20 {
			t.Errorf("file %d: %v, %v; want 1 MiB", i, st, err)
		}
	}
	all, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
	if err != nil || len(all) != 2<<20 || strings.Trim(string(all), "a") != "" {
		t.Errorf("kept output: %d bytes (want 2 MiB of 'a'), %v", len(all), err)
	}
}

// TestSupervisorKilled: when the supervisor dies first, the wait reports
// an error and the unsupervised task is killed too.
func TestSupervisorKilled(t *testing.T) {
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "abandoned", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	h := startTask(t, d, cfg)
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.ExecutorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, d, cfg.ID)
	if res.Err == nil {
		t.Errorf("exit = %+v, want an error (supervisor lost)", res)
	}
	if err := syscall.Kill(st.TaskPID, 0); !errors.Is(err, syscall.ESRCH) {
		// It may linger as a zombie of init for a moment: poll.
		testproc.Eventually(t, 10*time.Second, fmt.Sprintf("task pid %d gone after its supervisor died", st.TaskPID), func() bool {
			b, rerr := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.TaskPID), "stat"))
			return rerr != nil || strings.Contains(string(b), ") Z ")
		})
	}
}

// TestExecAsTaskUserInCgroup: raw_exec's ExecTask runs as the task's user
// and inside its cgroup (when the agent is root).
func TestExecAsTaskUserInCgroup(t *testing.T) {
	drivertest.NeedRoot(t)
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "asdaemon", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	cfg.User = "daemon"
	h := startTask(t, d, cfg)
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, err := d.(drivers.Execer).ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{
		Command: []string{"sh", "-c", "id -un; pwd; cat /proc/self/cgroup"}, Stdout: &out, Stderr: &out})
	if err != nil || !res.Successful() {
		t.Fatalf("ExecTask = %+v, %v: %s", res, err, out.String())
	}
	if !strings.HasPrefix(out.String(), "daemon\n"+cfg.TaskDir+"\n") {
		t.Errorf("exec output %q, want user daemon in %s", out.String(), cfg.TaskDir)
	}
	if st.Cgroup == "" || !strings.Contains(out.String(), st.Cgroup) {
		t.Errorf("exec output %q, want cgroup %q", out.String(), st.Cgroup)
	}
}
