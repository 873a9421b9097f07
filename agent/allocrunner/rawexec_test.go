package allocrunner

// The runners against the real raw_exec driver: a supervisor process
// per task (the drover binary), real logs, real signals, and a reattach
// to a live process after a simulated agent restart.

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/drivers/rawexec"
	"github.com/drover/drover/internal/testproc"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// droverBin returns the drover binary ($DROVER_TEST_BIN or built once);
// a failure fails the test under CI=true and skips it elsewhere.
func droverBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("raw_exec tests build the drover binary")
	}
	binOnce.Do(func() { binPath, _, binErr = testproc.DroverBinary() })
	if binErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("drover binary: %v", binErr)
		}
		t.Skipf("drover binary unavailable: %v", binErr)
	}
	return binPath
}

type rawHarness struct {
	mockHarness
	bin, stateDir string
}

func (h *rawHarness) run(a *api.Allocation, restore bool) {
	h.t.Helper()
	d, err := rawexec.New(drivers.Options{Config: map[string]any{"executor_path": h.bin}, DataDir: h.stateDir})
	if err != nil {
		h.t.Fatal(err)
	}
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID), Node: &api.Node{ID: "n", Name: "node-a"},
		Drivers: map[string]drivers.Driver{rawexec.Name: d}, Store: h.db, Restore: restore})
	if err != nil {
		h.t.Fatal(err)
	}
	h.launch(ar)
}

func newRawHarness(t *testing.T) *rawHarness {
	bin := droverBin(t)
	dir := t.TempDir()
	db, err := clientstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &rawHarness{mockHarness: mockHarness{t: t, dir: dir, db: db}, bin: bin, stateDir: filepath.Join(dir, "drivers")}
}

// noRestart makes a driver failure fail the test at once.
var noRestart = &api.RestartPolicy{Attempts: 0, Mode: api.RestartModeFail}

func shTask(script string) *api.Task {
	return &api.Task{Name: "web", Driver: rawexec.Name, KillTimeout: 2 * time.Second,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}
}

func TestRawExecEnvTemplateAndLogs(t *testing.T) {
	h := newRawHarness(t)
	tk := shTask(`echo "id=$DROVER_ALLOC_ID task=$NOMAD_TASK_NAME idx=$NOMAD_ALLOC_INDEX node=$DROVER_NODE_NAME"; cat "$NOMAD_TASK_DIR/app.conf"; echo oops >&2; test -d "$DROVER_SECRETS_DIR"`)
	tk.Templates = []*api.Template{{EmbeddedTmpl: `cpu={{ env "DROVER_CPU_LIMIT" }} job=${NOMAD_JOB_ID}` + "\n", DestPath: "local/app.conf"}}
	a := newAlloc(api.JobTypeBatch, noRestart, tk)
	h.run(a, false)
	<-h.ar.WaitCh()
	if st := h.ar.Alloc(); st.ClientStatus != api.AllocClientStatusComplete {
		var msgs []string
		for _, e := range st.TaskStates["web"].Events {
			msgs = append(msgs, e.Type+": "+e.DisplayMessage)
		}
		t.Fatalf("client status %s, events %q", st.ClientStatus, msgs)
	}
	logDir := filepath.Join(h.dir, "alloc", a.ID, "alloc", "logs")
	out, err := logging.ReadAll(logDir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	want := "id=" + a.ID + " task=web idx=2 node=node-a\ncpu=250 job=web\n"
	if string(out) != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if errOut, _ := logging.ReadAll(logDir, "web.stderr"); string(errOut) != "oops\n" {
		t.Errorf("stderr = %q, want %q", errOut, "oops\n")
	}
}

func TestRawExecReattachAndKill(t *testing.T) {
	h := newRawHarness(t)
	// The task records its PID, then waits for a signal.
	tk := shTask(`echo $$ > "$NOMAD_ALLOC_DIR/data/pid"; trap 'exit 7' TERM; while :; do sleep 0.05; done`)
	a := newAlloc(api.JobTypeService, noRestart, tk)
	h.run(a, false)
	pidFile := filepath.Join(h.dir, "alloc", a.ID, "alloc", "data", "pid")
	testproc.Eventually(t, 10*time.Second, "task wrote its pid", func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	pid, _ := os.ReadFile(pidFile)
	testproc.Eventually(t, 10*time.Second, "task running", func() bool { return h.state("web").State == api.TaskStateRunning })
	h.stop()
	<-h.ar.WaitCh()
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err != nil {
		t.Fatalf("task died with the runner: %v", err)
	}

	allocs, err := h.db.Allocs()
	if err != nil || len(allocs) != 1 {
		t.Fatalf("stored allocs %d, %v", len(allocs), err)
	}
	h.run(allocs[0], true)
	testproc.Eventually(t, 10*time.Second, "a Reattached event", func() bool {
		return contains(eventTypes(h.state("web")), api.TaskReattached)
	})
	if s := h.state("web"); s.State != api.TaskStateRunning || s.Restarts != 0 {
		t.Errorf("after reattach: %s restarts=%d", s.State, s.Restarts)
	}
	if got := len(callsStarted(h.state("web"))); got != 1 {
		t.Errorf("Started events = %d, want 1 (no restart on reattach)", got)
	}
	h.ar.Kill()
	<-h.ar.WaitCh()
	var term *api.TaskEvent
	for _, e := range h.state("web").Events {
		if e.Type == api.TaskTerminated {
			term = e
		}
	}
	if term == nil || term.ExitCode != 7 {
		t.Errorf("Terminated event %+v, want exit code 7 from the TERM trap", term)
	}
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		t.Error("task still running after the kill")
	}
}

func callsStarted(s *api.TaskState) []*api.TaskEvent {
	var out []*api.TaskEvent
	for _, e := range s.Events {
		if e.Type == api.TaskStarted {
			out = append(out, e)
		}
	}
	return out
}
