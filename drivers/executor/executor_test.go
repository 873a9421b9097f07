package executor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor/supervisor"
	"github.com/google/go-cmp/cmp"
)

func TestParseTaskConfig(t *testing.T) {
	tests := []struct {
		in      map[string]any
		want    *TaskOptions
		errKey  string
		invalid bool
	}{
		{in: map[string]any{"command": "/bin/echo", "args": []any{"a", "b"}}, want: &TaskOptions{Command: "/bin/echo", Args: []string{"a", "b"}}},
		{in: map[string]any{"command": "x", "args": []string{"y"}, "pid_mode": "host", "ipc_mode": "private"},
			want: &TaskOptions{Command: "x", Args: []string{"y"}, PIDMode: "host", IPCMode: "private"}},
		{in: map[string]any{}, errKey: "command", invalid: true},
		{in: map[string]any{"command": 3}, errKey: "command", invalid: true},
		{in: map[string]any{"command": "x", "args": "y"}, errKey: "args", invalid: true},
		{in: map[string]any{"command": "x", "args": []any{"y", 2}}, errKey: "args", invalid: true},
		{in: map[string]any{"command": "x", "pid_mode": "shared"}, errKey: "pid_mode", invalid: true},
		{in: map[string]any{"command": "x", "image": "busybox"}, errKey: "image", invalid: true},
	}
	for _, tc := range tests {
		got, err := ParseTaskConfig(tc.in)
		if tc.invalid {
			if !errors.Is(err, drivers.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.errKey) {
				t.Errorf("ParseTaskConfig(%v) = %v, want ErrInvalidConfig naming %q", tc.in, err, tc.errKey)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTaskConfig(%v): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseTaskConfig(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "hup": syscall.SIGHUP,
		"USR1": syscall.SIGUSR1, " SIGKILL ": syscall.SIGKILL} {
		got, err := ParseSignal(in)
		if err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSignal("SIGNOPE"); err == nil {
		t.Error("ParseSignal(SIGNOPE) succeeded")
	}
}

// TestResultFileRoundTrip: the exit-status file as the supervisor writes
// it (its own JSON encoder) reads back through ReadResult (encoding/json).
func TestResultFileRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "exit.json")
	if _, err := ReadResult(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadResult(missing) = %v, want ErrNotExist", err)
	}
	want := &Result{ExitCode: 137, Signal: 9, OOMKilled: true, Err: "a \"quoted\"\nerror \u2028 \xff", FinishedAt: 1796221083391257528}
	if err := supervisor.WriteFileAtomic(p, want.AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(p)
	if err != nil {
		t.Fatal(err)
	}
	want.Err = "a \"quoted\"\nerror \u2028 \ufffd" // invalid UTF-8 is replaced
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
	if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(p); err == nil {
		t.Error("ReadResult(corrupt) succeeded")
	}
}
