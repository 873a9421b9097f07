package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// capBit reports whether capability bit n is set in a CapEff hex mask.
func capBit(t *testing.T, hexMask string, n uint) bool {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSpace(hexMask), 16, 64)
	if err != nil {
		t.Fatalf("CapEff %q: %v", hexMask, err)
	}
	return v&(1<<n) != 0
}

const (
	capChown    = 0
	capNetAdmin = 12
	capSysAdmin = 21
)

func TestTaskOptionsInsideContainer(t *testing.T) {
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	capEff := `grep CapEff /proc/self/status | cut -f2`
	tests := []struct {
		name   string
		client map[string]any
		script string
		adjust func(t *testing.T, c *drivers.TaskConfig)
		check  func(t *testing.T, stdout string, res *drivers.ExitResult)
	}{
		{
			name:   "cap_drop",
			script: capEff,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["cap_drop"] = []any{"chown"} },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if capBit(t, out, capChown) {
					t.Errorf("CAP_CHOWN still effective: %s", out)
				}
			},
		},
		{
			name:   "cap_add_allowed",
			client: map[string]any{"allow_caps": []any{"NET_ADMIN"}},
			script: capEff,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["cap_add"] = []any{"NET_ADMIN"} },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if !capBit(t, out, capNetAdmin) || capBit(t, out, capSysAdmin) {
					t.Errorf("CapEff %s: want NET_ADMIN and not SYS_ADMIN", out)
				}
			},
		},
		{
			name:   "privileged_allowed",
			client: map[string]any{"allow_privileged": true},
			script: capEff,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["privileged"] = true },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if !capBit(t, out, capSysAdmin) {
					t.Errorf("privileged CapEff %s lacks SYS_ADMIN", out)
				}
			},
		},
		{
			name:   "seccomp_default_on",
			script: `grep '^Seccomp:' /proc/self/status | cut -f2`,
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if strings.TrimSpace(out) != "2" {
					t.Errorf("Seccomp mode %q, want 2 (filter)", out)
				}
			},
		},
		{
			name:   "seccomp_off_allowed",
			client: map[string]any{"allow_privileged": true},
			script: `grep '^Seccomp:' /proc/self/status | cut -f2`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["seccomp"] = false },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if strings.TrimSpace(out) != "0" {
					t.Errorf("Seccomp mode %q, want 0", out)
				}
			},
		},
		{
			name:   "readonly_rootfs",
			script: `touch /rootfile 2>/dev/null && echo rootfs-writable; touch /alloc/ok && echo alloc-writable`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["readonly_rootfs"] = true },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if out != "alloc-writable\n" {
					t.Errorf("stdout %q, want only alloc-writable", out)
				}
			},
		},
		{
			name:   "hostname_and_isolated_network",
			script: `hostname; readlink /proc/self/ns/net`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["hostname"] = "box1" },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != 2 || lines[0] != "box1" || lines[1] == hostNet {
					t.Errorf("stdout %q, want box1 and a netns other than %s", out, hostNet)
				}
			},
		},
		{
			name:   "host_network",
			script: `readlink /proc/self/ns/net`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) { c.Config["host_network"] = true },
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if strings.TrimSpace(out) != hostNet {
					t.Errorf("netns %q, want the host's %s", out, hostNet)
				}
			},
		},
		{
			name:   "ports_use_host_network",
			script: `readlink /proc/self/ns/net`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) {
				c.Ports = []api.AllocatedPort{{Label: "http", Value: 25000, To: 25000}}
			},
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if strings.TrimSpace(out) != hostNet {
					t.Errorf("netns %q, want the host's %s", out, hostNet)
				}
			},
		},
		{
			name:   "env_merge_and_user",
			script: `echo "$DROVER_TASK_NAME $FROM_CFG $SHARED"; id -u`,
			adjust: func(_ *testing.T, c *drivers.TaskConfig) {
				c.Env["SHARED"] = "task"
				c.Config["env"] = map[string]any{"FROM_CFG": "cfg", "SHARED": "cfg"}
				c.User = "nobody"
			},
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if out != "web cfg cfg\n65534\n" {
					t.Errorf("stdout %q", out)
				}
			},
		},
		{
			name: "config_mounts",
			script: `cat /data/f; touch /data/g 2>/dev/null && echo data-writable; ` +
				`touch /scratch/x && echo scratch-writable; grep ' /scratch ' /proc/mounts | cut -d' ' -f3`,
			adjust: func(t *testing.T, c *drivers.TaskConfig) {
				if err := os.MkdirAll(filepath.Join(c.TaskDir, "local", "data"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(c.TaskDir, "local", "data", "f"), []byte("from-host\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				c.Config["mounts"] = []any{
					map[string]any{"source": "local/data", "target": "/data", "options": []any{"ro"}},
					map[string]any{"type": "tmpfs", "target": "/scratch"},
				}
			},
			check: func(t *testing.T, out string, _ *drivers.ExitResult) {
				if out != "from-host\nscratch-writable\ntmpfs\n" {
					t.Errorf("stdout %q", out)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t, tc.client)
			cfg := shTask(t, tc.script)
			if tc.adjust != nil {
				tc.adjust(t, cfg)
			}
			startTask(t, d, cfg)
			res := waitExit(t, d, cfg.ID, 60*time.Second)
			if !res.Successful() {
				t.Fatalf("exit %+v, stderr %q", res, readLog(t, cfg, "stderr"))
			}
			tc.check(t, readLog(t, cfg, "stdout"), res)
		})
	}
}

func TestEntrypointCommandArgs(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, "")
	cfg.Config = map[string]any{
		"image": busyboxImage(t), "entrypoint": []any{"/bin/echo", "ep"}, "command": "cmd", "args": []any{"a1", "a2"},
	}
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID, 30*time.Second); !res.Successful() {
		t.Fatalf("exit %+v", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "ep cmd a1 a2\n" {
		t.Fatalf("stdout %q", got)
	}
}

func TestStartRefusals(t *testing.T) {
	d := newDriver(t, nil)
	tests := []struct {
		name   string
		adjust func(c *drivers.TaskConfig)
	}{
		{"privileged", func(c *drivers.TaskConfig) { c.Config["privileged"] = true }},
		{"cap_add", func(c *drivers.TaskConfig) { c.Config["cap_add"] = []any{"SYS_ADMIN"} }},
		{"seccomp_off", func(c *drivers.TaskConfig) { c.Config["seccomp"] = false }},
		{"seccomp_profile", func(c *drivers.TaskConfig) { c.Config["seccomp_profile"] = "/etc/hostname" }},
		{"port_remap", func(c *drivers.TaskConfig) { c.Ports = []api.AllocatedPort{{Label: "http", Value: 25001, To: 8080}} }},
		{"missing_archive", func(c *drivers.TaskConfig) { c.Config["image"] = "oci-archive://local/none.tar" }},
		{"archive_escape", func(c *drivers.TaskConfig) { c.Config["image"] = "oci-archive://../../etc/x.tar" }},
		{"mount_escape", func(c *drivers.TaskConfig) {
			c.Config["mounts"] = []any{map[string]any{"source": "../../..", "target": "/x"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := shTask(t, "true")
			tc.adjust(cfg)
			_, err := d.StartTask(context.Background(), cfg)
			if !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Fatalf("StartTask: %v, want ErrInvalidConfig", err)
			}
			// Nothing is left behind.
			left, lerr := d.Leftovers(context.Background(), nil)
			if lerr != nil {
				t.Fatal(lerr)
			}
			for _, id := range left {
				if id == ContainerID(cfg.ID) {
					t.Fatalf("refused task left container %s", id)
				}
			}
		})
	}
}

func TestArchiveInAllocDirAndEvents(t *testing.T) {
	d := newDriver(t, nil)
	var mu sync.Mutex
	var events []string
	d.OnEvent(func(e Event) {
		mu.Lock()
		events = append(events, e.Message)
		mu.Unlock()
	})
	cfg := shTask(t, "echo from-local-archive")
	src := strings.TrimPrefix(busyboxImage(t), ArchivePrefix)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "img.tar"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Config["image"] = "local/img.tar"
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID, 30*time.Second); !res.Successful() {
		t.Fatalf("exit %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 || !strings.Contains(events[0], "importing image archive "+filepath.Join(cfg.TaskDir, "local", "img.tar")) {
		t.Fatalf("events %q, want the import first", events)
	}
}

func TestExecStdinAndTTY(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, `echo ready; while true; do sleep 0.1; done`)
	startTask(t, d, cfg)
	waitForLog(t, cfg, "ready", 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb strings.Builder
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `tr a-z A-Z; echo e >&2; exit 2`},
		Stdin:   strings.NewReader("shout\n"), Stdout: &out, Stderr: &errb,
	})
	if err != nil {
		t.Fatalf("ExecTask: %v", err)
	}
	if res.ExitCode != 2 || out.String() != "SHOUT\n" || errb.String() != "e\n" {
		t.Fatalf("exec = %+v stdout %q stderr %q", res, out.String(), errb.String())
	}
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 33, Width: 111}
	var tty lockedBuilder
	res, err = d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `i=0; while [ "$(stty size 2>/dev/null)" != "33 111" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; stty size; [ -t 1 ] && echo is-a-tty`},
		TTY:     true, Stdout: &tty, Resize: resize,
	})
	if err != nil {
		t.Fatalf("ExecTask tty: %v", err)
	}
	if got := strings.ReplaceAll(tty.String(), "\r", ""); !res.Successful() || got != "33 111\nis-a-tty\n" {
		t.Fatalf("tty exec = %+v output %q", res, got)
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
