package executor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drover/drover/drivers"
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

func TestResultFileRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "exit.json")
	if _, err := ReadResult(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadResult(missing) = %v, want ErrNotExist", err)
	}
	want := &Result{ExitCode: 137, Signal: 9, OOMKilled: true, FinishedAt: 42}
	if err := writeJSONAtomic(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(p)
	if err != nil {
		t.Fatal(err)
	}
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

func TestSupervisorRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.json")
	if err := os.WriteFile(p, []byte(`{"command":"/bin/true"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfig(p); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("readConfig(incomplete) = %v", err)
	}
	if code := Main(t.Context(), nil); code != 2 {
		t.Errorf("Main(no args) = %d, want 2", code)
	}
}

func TestCgroupResources(t *testing.T) {
	c := &CgroupConfig{Name: "x", CPUShares: 500, ReservedCores: []uint16{1, 3}, MemoryMB: 100, MemoryMaxMB: 200}
	r := c.resources()
	if *r.CPU.Shares != 500 || *r.CPU.Quota != 200000 || *r.CPU.Period != 100000 || r.CPU.Cpus != "1,3" {
		t.Errorf("cpu = %+v", r.CPU)
	}
	if *r.Memory.Limit != 200<<20 || *r.Memory.Reservation != 100<<20 {
		t.Errorf("memory limit %d, reservation %d", *r.Memory.Limit, *r.Memory.Reservation)
	}
	r = (&CgroupConfig{Name: "y", MemoryMB: 64}).resources()
	if *r.Memory.Limit != 64<<20 || r.Memory.Reservation != nil || r.CPU != nil {
		t.Errorf("memory-only resources = %+v %+v", r.Memory, r.CPU)
	}
	if got := CgroupName("a1/web/ff.0"); got != "a1_web_ff_0" {
		t.Errorf("CgroupName = %q", got)
	}
}

func TestDeviceRules(t *testing.T) {
	rules := deviceRules([]Device{{HostPath: "/dev/null", Permissions: "r"}, {HostPath: "/no/such/dev"}})
	if rules[0].Allow || rules[0].Access != "rwm" {
		t.Errorf("first rule = %+v, want deny all", rules[0])
	}
	last := rules[len(rules)-1]
	if !last.Allow || last.Type != "c" || *last.Major != 1 || *last.Minor != 3 || last.Access != "r" {
		t.Errorf("device rule = %+v, want c 1:3 r", last)
	}
}
